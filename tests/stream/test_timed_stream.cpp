// The per-connection deadline timer: every read, write and connect still ends
// by its deadline (with beast::error::timeout), deadlines are fixed when an
// operation starts, and an idle connection is never closed by the watchdog.
#include "io/timed_stream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include <functional>

using namespace spe;
using namespace std::chrono_literals;

namespace {

/// A connected pair on loopback: `stream` (under test) and a plain `peer`.
struct Pair {
    asio::io_context ioc;
    TimedStream stream{ioc.get_executor()};
    tcp::socket peer{ioc};

    Pair() {
        tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        std::vector<tcp::endpoint> eps{acceptor.local_endpoint()};
        error_code connect_ec = asio::error::would_block;
        stream.async_connect(eps, [&](error_code ec) { connect_ec = ec; });
        acceptor.accept(peer);
        ioc.run_for(5s);
        ioc.restart();
        REQUIRE_FALSE(connect_ec);
    }

    /// Runs the coroutine to its end (bounded); returns what it returned.
    template <class T>
    T run(std::function<awaitable<T>()> body) {
        T out{};
        bool done = false;
        asio::co_spawn(ioc, body(), [&](std::exception_ptr e, T v) {
            if (e) std::rethrow_exception(e);
            out = v;
            done = true;
        });
        ioc.run_for(10s);
        ioc.restart();
        REQUIRE(done);
        return out;
    }
};

std::int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

}  // namespace

TEST_CASE("a read with no data ends at its deadline with timeout, and the socket is closed") {
    Pair p;
    const auto t0 = Clock::now();
    auto result = p.run<error_code>([&]() -> awaitable<error_code> {
        char buf[16];
        error_code ec;
        p.stream.expires_after(150ms);
        co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
        co_return ec;
    });
    CHECK(result == beast::error::timeout);
    CHECK(ms_since(t0) >= 140);
    CHECK_FALSE(p.stream.socket().is_open());
}

TEST_CASE("data in time: no error, and an idle connection outlives its old deadline") {
    Pair p;
    asio::write(p.peer, asio::buffer(std::string("hello")));
    auto n = p.run<std::size_t>([&]() -> awaitable<std::size_t> {
        char buf[64];
        error_code ec;
        p.stream.expires_after(100ms);
        auto got = co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
        REQUIRE_FALSE(ec);
        // Nothing pending while the deadline passes: the watchdog leaves it open.
        asio::steady_timer wait(p.ioc, 250ms);
        co_await wait.async_wait(with_ec(ec));
        co_return got;
    });
    CHECK(n == 5);
    CHECK_FALSE(p.stream.last_read_filled_buffer());
    CHECK(p.stream.socket().is_open());
}

TEST_CASE("an operation started after its deadline passed times out at once, as with tcp_stream") {
    Pair p;
    p.stream.expires_after(20ms);
    const auto result = p.run<error_code>([&]() -> awaitable<error_code> {
        error_code ec;
        asio::steady_timer wait(p.ioc, 60ms);
        co_await wait.async_wait(with_ec(ec));
        const auto t0 = Clock::now();
        char buf[16];
        co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
        CHECK(ms_since(t0) < 1000);
        co_return ec;
    });
    CHECK(result == beast::error::timeout);
}

TEST_CASE("a later operation with an earlier deadline still ends on time, also after disarm") {
    Pair p;
    // disarm: a pooled connection drops its idle timer wait; the next operation arms it again.
    const bool disarm = GENERATE(false, true);
    const auto result = p.run<error_code>([&]() -> awaitable<error_code> {
        char buf[16];
        error_code ec;
        // The first read arms the timer for a distant deadline and completes.
        p.stream.expires_after(60s);
        asio::write(p.peer, asio::buffer(std::string("x")));
        co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
        REQUIRE_FALSE(ec);
        CHECK(p.stream.armed());
        if (disarm) {
            p.stream.disarm();
            CHECK_FALSE(p.stream.armed());
        }
        const auto t0 = Clock::now();
        p.stream.expires_after(150ms);
        co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
        CHECK(ms_since(t0) >= 140);
        CHECK(ms_since(t0) < 5000);
        co_return ec;
    });
    CHECK(result == beast::error::timeout);
}

TEST_CASE("a pending read keeps the deadline it started with; a write gets the new one") {
    Pair p;
    const auto t0 = Clock::now();
    error_code read_ec, write_ec;
    bool read_done = false;
    p.stream.expires_after(200ms);
    char buf[16];
    p.stream.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t) {
        read_ec = ec;
        read_done = true;
    });
    // Set while the read is pending: applies to the write only.
    p.stream.expires_after(30s);
    p.stream.async_write_some(asio::buffer("ping", 4), [&](error_code ec, std::size_t) { write_ec = ec; });
    p.ioc.run_for(10s);
    REQUIRE(read_done);
    CHECK(read_ec == beast::error::timeout);
    CHECK(ms_since(t0) >= 190);
    CHECK(ms_since(t0) < 5000);
    CHECK_FALSE(write_ec);  // it had completed before the read's deadline closed the socket
}

TEST_CASE("move_deadlines moves a pending read's deadline, later or earlier") {
    SECTION("later: the read outlives the deadline it started with") {
        Pair p;
        const auto t0 = Clock::now();
        auto got = p.run<std::size_t>([&]() -> awaitable<std::size_t> {
            char buf[16];
            error_code ec;
            p.stream.expires_after(150ms);
            asio::steady_timer later(p.ioc, 50ms);
            later.async_wait([&](error_code) { p.stream.move_deadlines(Clock::now() + 30s); });
            asio::steady_timer data(p.ioc, 400ms);
            data.async_wait([&](error_code) { asio::write(p.peer, asio::buffer(std::string("late"))); });
            auto n = co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
            REQUIRE_FALSE(ec);
            co_return n;
        });
        CHECK(got == 4);
        CHECK(ms_since(t0) >= 390);
    }
    SECTION("earlier: the read ends at the new deadline") {
        Pair p;
        const auto t0 = Clock::now();
        auto result = p.run<error_code>([&]() -> awaitable<error_code> {
            char buf[16];
            error_code ec;
            p.stream.expires_after(30s);
            asio::steady_timer sooner(p.ioc, 20ms);
            sooner.async_wait([&](error_code) { p.stream.move_deadlines(Clock::now() + 100ms); });
            co_await p.stream.async_read_some(asio::buffer(buf), with_ec(ec));
            co_return ec;
        });
        CHECK(result == beast::error::timeout);
        CHECK(ms_since(t0) < 5000);
    }
}

TEST_CASE("a write the peer never reads ends at its deadline with timeout") {
    Pair p;
    const auto result = p.run<error_code>([&]() -> awaitable<error_code> {
        const std::string big(64 << 20, 'x');  // far more than the socket buffers hold
        error_code ec;
        p.stream.expires_after(300ms);
        co_await asio::async_write(p.stream, asio::buffer(big), with_ec(ec));
        co_return ec;
    });
    CHECK(result == beast::error::timeout);
}

TEST_CASE("cancel ends a pending read with operation_aborted and keeps the socket") {
    Pair p;
    error_code read_ec;
    char buf[16];
    p.stream.expires_after(30s);
    p.stream.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t) { read_ec = ec; });
    asio::post(p.ioc, [&] { p.stream.cancel(); });
    p.ioc.run_for(5s);
    CHECK(read_ec == asio::error::operation_aborted);
    CHECK(p.stream.socket().is_open());
}

TEST_CASE("waiting for readability takes no bytes and ends when data arrives, not before") {
    Pair p;
    const auto t0 = Clock::now();
    asio::steady_timer later(p.ioc, 150ms);
    later.async_wait([&](error_code) { asio::write(p.peer, asio::buffer(std::string("GET"))); });
    auto waited_ms = p.run<std::int64_t>([&]() -> awaitable<std::int64_t> {
        error_code ec;
        p.stream.expires_after(5s);
        co_await p.stream.async_wait_readable(with_ec(ec));
        REQUIRE_FALSE(ec);
        co_return ms_since(t0);
    });
    CHECK(waited_ms >= 140);
    CHECK(waited_ms < 5000);
    CHECK(p.stream.socket().available() == 3);  // the bytes are still there for the parser
}

TEST_CASE("waiting for readability ends at its deadline with timeout, or with operation_aborted on cancel") {
    SECTION("deadline") {
        Pair p;
        const auto t0 = Clock::now();
        auto result = p.run<error_code>([&]() -> awaitable<error_code> {
            error_code ec;
            p.stream.expires_after(150ms);
            co_await p.stream.async_wait_readable(with_ec(ec));
            co_return ec;
        });
        CHECK(result == beast::error::timeout);
        CHECK(ms_since(t0) >= 140);
        CHECK_FALSE(p.stream.socket().is_open());
    }
    SECTION("cancel") {
        Pair p;
        error_code wait_ec;
        p.stream.expires_after(30s);
        p.stream.async_wait_readable([&](error_code ec) { wait_ec = ec; });
        asio::post(p.ioc, [&] { p.stream.cancel(); });
        p.ioc.run_for(5s);
        CHECK(wait_ec == asio::error::operation_aborted);
        CHECK(p.stream.socket().is_open());
    }
}

TEST_CASE("connecting where nothing listens is refused") {
    asio::io_context ioc;
    tcp::acceptor probe(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    std::vector<tcp::endpoint> eps{probe.local_endpoint()};
    probe.close();
    TimedStream stream(ioc.get_executor());
    stream.expires_after(2s);
    error_code out;
    stream.async_connect(eps, [&](error_code ec) { out = ec; });
    ioc.run_for(5s);
    CHECK(out == asio::error::connection_refused);
}
