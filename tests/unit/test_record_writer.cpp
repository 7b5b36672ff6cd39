// The writer thread: every queued record reaches its file, in order, and a
// batch reaches it in a few large writes, not one per stdio buffer of 4 KiB.
#include "log/record_writer.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

/// This process's write system calls so far (all threads): /proc/self/io's syscw.
std::uint64_t write_calls() {
    std::ifstream io("/proc/self/io");
    std::string key;
    std::uint64_t value = 0;
    while (io >> key >> value)
        if (key == "syscw:") return value;
    return 0;
}

std::string line_of(int i) {
    // About the size of a judged record with four proxies.
    return "{\"id\":" + std::to_string(i) + ",\"pad\":\"" + std::string(3000, 'x') + "\"}\n";
}

}  // namespace

TEST_CASE("a batch of records reaches the log in a few large writes, every record whole and in order") {
    const auto path = std::filesystem::temp_directory_path() / "spe-test-record-writer.jsonl";
    std::filesystem::remove(path);
    constexpr int kRecords = 300;  // about 900 KB: 220 writes through a 4 KiB stdio buffer
    const auto before = write_calls();
    {
        spe::RecordWriter writer(path.string(), "", 64 << 20);
        // Mostly queued before the writer's first wake (it sleeps up to 100 ms): a batch or a few, each
        // flushed, with a write per 256 KiB buffer filled.
        for (int i = 0; i < kRecords; ++i)
            REQUIRE(writer.submit(spe::RecordWrite{line_of(i), {}, {}, {}}));
        writer.close();
        CHECK(writer.written() == kRecords);
    }
    const auto writes = write_calls() - before;
    INFO("write system calls: " << writes);
    CHECK(writes <= 40);  // 222 through stdio's own 4 KiB buffer

    std::ifstream in(path);
    std::string line;
    int expected = 0;
    bool all_whole = true;
    while (std::getline(in, line))
        all_whole = all_whole && line + "\n" == line_of(expected++);
    CHECK(expected == kRecords);
    CHECK(all_whole);
    std::filesystem::remove(path);
}
