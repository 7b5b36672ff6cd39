// Records reach the disk off the I/O thread: a disk that stops (here a FIFO
// nobody reads, whose pipe fills) never makes ResultLog::write wait; a queue
// that fills drops and counts; every record queued is on disk after close,
// the ones written after the disk came back included.
#include "core/config.hpp"
#include "log/result_log.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <optional>
#include <set>
#include <thread>

using namespace std::chrono_literals;

namespace {

spe::RequestRecord record_number(std::uint64_t id) {
    spe::RequestRecord r;
    r.id = id;
    r.client = "127.0.0.1:1";
    r.method = "GET";
    r.url = "http://127.0.0.1/" + std::string(1000, 'p');  // about 1.3 KB a line
    r.version = "HTTP/1.1";
    return r;
}

/// A FIFO standing in for a disk that stops: writes block once its pipe (made
/// as small as the kernel allows) is full, until the test reads.
class StuckDisk {
public:
    StuckDisk() {
        dir_ = std::filesystem::temp_directory_path() /
               ("spe-stuck-" + std::to_string(::getpid()) + "-" + std::to_string(serial_++));
        std::filesystem::create_directories(dir_);
        path_ = (dir_ / "records.jsonl").string();
        REQUIRE(::mkfifo(path_.c_str(), 0600) == 0);
        // Opened for reading first (non-blocking), so the log's open for writing does not wait.
        fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK);
        REQUIRE(fd_ >= 0);
        ::fcntl(fd_, F_SETPIPE_SZ, 4096);
    }
    ~StuckDisk() {
        if (fd_ >= 0) ::close(fd_);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    const std::string& path() const { return path_; }

    /// Starts reading everything until the writer closes the file; the ids of the lines.
    std::future<std::vector<std::uint64_t>> move_again() {
        ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
        return std::async(std::launch::async, [fd = fd_] {
            std::string text;
            char buf[65536];
            ssize_t n = 0;
            while ((n = ::read(fd, buf, sizeof buf)) > 0)
                text.append(buf, static_cast<std::size_t>(n));
            std::vector<std::uint64_t> ids;
            std::size_t start = 0;
            for (auto end = text.find('\n'); end != std::string::npos; start = end + 1, end = text.find('\n', start))
                ids.push_back(nlohmann::json::parse(text.substr(start, end - start))["id"].get<std::uint64_t>());
            return ids;
        });
    }

private:
    static inline int serial_ = 0;
    std::filesystem::path dir_;
    std::string path_;
    int fd_ = -1;
};

spe::Config config_for(const StuckDisk& disk, std::uint64_t queue_bytes) {
    spe::Config c;
    c.log_path = disk.path();
    c.log_queue_bytes = queue_bytes;
    return c;
}

}  // namespace

TEST_CASE("write never waits for a stuck disk, and every record reaches it once it moves") {
    StuckDisk disk;
    std::optional<spe::ResultLog> log(std::in_place, config_for(disk, 64 << 20));
    // 300 records, about 400 KB: a hundred times what the stuck pipe takes.
    auto writes = std::async(std::launch::async, [&] {
        for (std::uint64_t id = 1; id <= 300; ++id)
            log->write(record_number(id));
    });
    // Generous: the writes take microseconds; they only miss this if they wait for the disk.
    const bool returned = writes.wait_for(20s) == std::future_status::ready;
    auto on_disk = disk.move_again();  // also frees writes that did wait, so the test ends either way
    writes.get();
    CHECK(returned);
    log.reset();  // closes: the queue is written, then the file closed (the reader sees its end)
    const auto ids = on_disk.get();
    REQUIRE(ids.size() == 300);
    for (std::size_t i = 0; i < ids.size(); ++i)
        CHECK(ids[i] == i + 1);
}

TEST_CASE("a full queue drops and counts; a record written after the disk came back is still written") {
    StuckDisk disk;
    std::optional<spe::ResultLog> log(std::in_place, config_for(disk, 32 * 1024));
    std::uint64_t id = 0;
    // The writer blocks on the first records; the rest fill the 32 KB queue, then are dropped.
    while (log->records_dropped() == 0 && id < 10'000)
        log->write(record_number(++id));
    REQUIRE(log->records_dropped() > 0);
    const auto before = id;

    auto on_disk = disk.move_again();
    // The writer catches up (bounded wait: it has only the queue left to write).
    for (int i = 0; i < 2000 && log->records_written() + log->records_dropped() < before; ++i)
        std::this_thread::sleep_for(10ms);
    REQUIRE(log->records_written() + log->records_dropped() == before);
    log->write(record_number(++id));  // after the slow spell
    log->close();
    const auto written = log->records_written(), dropped = log->records_dropped();
    CHECK(written + dropped == id);
    CHECK(log->records_failed() == 0);
    log.reset();

    const auto ids = on_disk.get();
    CHECK(ids.size() == written);
    REQUIRE_FALSE(ids.empty());
    CHECK(ids.front() == 1);
    CHECK(ids.back() == id);  // the record after the slow spell is there
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    CHECK(std::set<std::uint64_t>(ids.begin(), ids.end()).size() == ids.size());
}
