// The queue between the I/O thread and the record writer: bounded in bytes,
// every refused record counted, everything queued handed over on close.
#include "log/record_queue.hpp"

#include <catch2/catch.hpp>

#include <thread>

using spe::RecordQueue;
using spe::RecordWrite;
using namespace std::chrono_literals;

namespace {

RecordWrite record_of(std::size_t bytes, char fill = 'r') {
    return RecordWrite{std::string(bytes, fill), {}, {}, {}};
}

}  // namespace

TEST_CASE("a record's size counts its JSON, ROPE and capture bytes") {
    RecordWrite r{"12345", "123", {{"ab", "1234"}}, {}};
    CHECK(r.bytes() == 5 + 3 + 2 + 4);
}

TEST_CASE("the queue holds at most its byte budget and counts what it refuses") {
    RecordQueue q(1000);
    CHECK(q.push(record_of(400)));
    CHECK(q.push(record_of(400)));
    CHECK_FALSE(q.push(record_of(400)));  // 1200 > 1000
    CHECK(q.push(record_of(200)));        // exactly 1000
    CHECK_FALSE(q.push(record_of(1)));
    CHECK(q.dropped() == 2);
    CHECK(q.queued_bytes() == 1000);

    std::deque<RecordWrite> out;
    REQUIRE(q.pop_all(out, 0ms));
    CHECK(out.size() == 3);
    CHECK(q.queued_bytes() == 0);
    CHECK(q.push(record_of(400)));  // room again once the writer took them
    CHECK(q.dropped() == 2);
}

TEST_CASE("a record larger than the whole budget still goes in when the queue is empty") {
    RecordQueue q(100);
    CHECK(q.push(record_of(500)));
    CHECK_FALSE(q.push(record_of(1)));
    CHECK(q.dropped() == 1);
}

TEST_CASE("records come out in the order they went in") {
    RecordQueue q(1 << 20);
    for (char c = 'a'; c <= 'e'; ++c)
        q.push(record_of(3, c));
    std::deque<RecordWrite> out;
    REQUIRE(q.pop_all(out, 0ms));
    std::string order;
    for (const auto& r : out)
        order += r.json.front();
    CHECK(order == "abcde");
}

TEST_CASE("close hands over what is queued, then ends the writer's loop; later pushes are counted as dropped") {
    RecordQueue q(1 << 20);
    q.push(record_of(10));
    q.push(record_of(10));
    q.close();
    CHECK_FALSE(q.push(record_of(10)));
    CHECK(q.dropped() == 1);
    std::deque<RecordWrite> out;
    REQUIRE(q.pop_all(out, 10s));  // does not wait: closed
    CHECK(out.size() == 2);
    out.clear();
    CHECK_FALSE(q.pop_all(out, 10s));
    CHECK(out.empty());
}

TEST_CASE("a writer thread waiting on the queue drains it to the last record when it is closed") {
    RecordQueue q(1 << 20);
    std::size_t got = 0;
    std::thread writer([&] {
        std::deque<RecordWrite> batch;
        while (q.pop_all(batch, 5ms)) {
            got += batch.size();
            batch.clear();
        }
    });
    for (int i = 0; i < 10'000; ++i)
        REQUIRE(q.push(record_of(50)));
    q.close();
    writer.join();
    CHECK(got == 10'000);
    CHECK(q.dropped() == 0);
}
