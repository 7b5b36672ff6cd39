// UpstreamConnection on its own, against a scripted peer: connecting, reusing
// a kept-alive connection, the one retry of a GET whose kept-alive connection
// failed before any reply byte (none for a POST), and bytes after a reply.
#include "io/upstream_connection.hpp"
#include "scripted_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <catch2/catch.hpp>

using namespace spe;
using namespace spe::test;
using namespace std::chrono_literals;

namespace {

const std::string kBody = "0123456789abcdef";
const std::string kReply = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody;

/// What one exchange on the connection gave: send()'s result and measure, the reply read after it.
struct Exchange {
    LegError sent = LegError::none;
    Measure measure;
    unsigned status = 0;
    std::string body;
};

struct Upstream {
    asio::io_context ioc;
    ScriptedServer server;
    std::vector<tcp::endpoint> endpoints;
    UpstreamConnection conn;

    explicit Upstream(std::vector<std::vector<Step>> scripts,
                      Clock::duration probe_after = UpstreamConnection::kProbeAfter)
        : server(ioc, std::move(scripts)),
          endpoints{server.endpoint()},
          conn(ioc.get_executor(), endpoints, 64 * 1024, probe_after) {}
    ~Upstream() { server.stop(); }

    /// Sends a request of `method` and, if that worked, reads the reply (as the legs do: what
    /// send() buffered first), then ends it as a kept-alive reply would.
    Exchange exchange(http::verb method = http::verb::get, std::chrono::milliseconds timeout = 2000ms) {
        Exchange out;
        bool done = false;
        asio::co_spawn(ioc, run(method, timeout, out), [&](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
            done = true;
            ioc.stop();  // the server's accept loop would keep run_for busy
        });
        ioc.run_for(10s);
        ioc.restart();
        REQUIRE(done);
        return out;
    }
    /// Lets the scripted peer finish what it does after a reply (a close, say).
    void let_server_run() {
        ioc.run_for(100ms);
        ioc.restart();
    }

private:
    awaitable<void> run(http::verb method, std::chrono::milliseconds timeout, Exchange& out) {
        Request req{method, "http://origin.test/x", 11};
        req.set(http::field::host, "origin.test");
        const WireRequest wire(std::move(req));
        const auto t0 = Clock::now();
        out.sent = co_await conn.send(wire, t0, t0 + timeout, out.measure);
        if (out.sent != LegError::none) co_return;
        http::response_parser<http::string_body> parser;
        parser.skip(method == http::verb::head);
        error_code ec;
        parse_buffered(parser, conn.buffer(), ec);
        if (!ec && !parser.is_done()) {
            parser.eager(true);
            parse_buffered(parser, conn.buffer(), ec);
        }
        if (!ec && !parser.is_done()) co_await http::async_read(conn.stream(), conn.buffer(), parser, with_ec(ec));
        REQUIRE_FALSE(ec);
        out.status = parser.get().result_int();
        out.body = parser.get().body();
        conn.end_reply(parser.get().keep_alive());
    }
};

}  // namespace

TEST_CASE("UpstreamConnection: connects, times the connect and the first byte, buffers the reply") {
    Upstream up({{send_bytes(kReply, 1)}});
    const auto x = up.exchange();
    CHECK(x.sent == LegError::none);
    CHECK_FALSE(x.measure.retried);
    CHECK(x.measure.connect_us > 0);
    REQUIRE(x.measure.ttfb_us);
    CHECK(*x.measure.ttfb_us >= *x.measure.connect_us);
    CHECK(x.status == 200u);
    CHECK(x.body == kBody);
    CHECK(up.conn.is_reusable());
    CHECK_FALSE(up.conn.bytes_after_reply());
}

TEST_CASE("UpstreamConnection: a kept-alive connection carries the next request without a connect") {
    Upstream up({{send_bytes(kReply)}, {send_bytes(kReply, 3)}});
    REQUIRE(up.exchange().body == kBody);
    const auto second = up.exchange();
    CHECK(second.sent == LegError::none);
    CHECK(second.measure.connect_us == 0);
    CHECK(second.body == kBody);
    CHECK(up.server.requests_seen() == 2);
}

TEST_CASE("UpstreamConnection: a reply that asks to close is not reused") {
    Upstream up(
        {{send_bytes("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")}, {send_bytes(kReply)}});
    REQUIRE(up.exchange().status == 200u);
    CHECK_FALSE(up.conn.is_reusable());
    CHECK_FALSE(up.conn.is_open());
    const auto second = up.exchange();
    CHECK(second.measure.connect_us > 0);
    CHECK(second.body == kBody);
}

TEST_CASE("UpstreamConnection: a GET whose kept-alive connection fails before any byte is sent again, once") {
    SECTION("closed unanswered: the second attempt on a fresh connection") {
        Upstream up({{send_bytes(kReply)}, {close_conn()}, {send_bytes(kReply)}});
        REQUIRE(up.exchange().sent == LegError::none);
        const auto x = up.exchange();
        CHECK(x.sent == LegError::none);
        CHECK(x.measure.retried);
        CHECK(x.measure.connect_us > 0);
        CHECK(x.body == kBody);
        CHECK(up.server.requests_seen() == 3);
    }
    SECTION("reset unanswered: the same") {
        Upstream up({{send_bytes(kReply)}, {reset_conn()}, {send_bytes(kReply)}});
        REQUIRE(up.exchange().sent == LegError::none);
        const auto x = up.exchange();
        CHECK(x.sent == LegError::none);
        CHECK(x.measure.retried);
        CHECK(up.server.requests_seen() == 3);
    }
    SECTION("the retry fails too: its error, no third attempt") {
        Upstream up({{send_bytes(kReply)}, {close_conn()}, {close_conn()}, {send_bytes(kReply)}});
        REQUIRE(up.exchange().sent == LegError::none);
        const auto x = up.exchange();
        CHECK(x.sent == LegError::closed);
        CHECK(x.measure.retried);
        CHECK(up.server.requests_seen() == 3);
    }
    SECTION("a fresh connection that fails is never retried") {
        Upstream up({{close_conn()}, {send_bytes(kReply)}});
        const auto x = up.exchange();
        CHECK(x.sent == LegError::closed);
        CHECK_FALSE(x.measure.retried);
        CHECK(up.server.requests_seen() == 1);
    }
    SECTION("a failure after the first reply byte is not the connection's to retry") {
        Upstream up({{send_bytes(kReply)}, {send_bytes("HTTP/1.1 2"), close_conn()}, {send_bytes(kReply)}});
        REQUIRE(up.exchange().sent == LegError::none);
        Measure m;
        LegError sent = LegError::aborted;
        bool done = false;
        asio::co_spawn(
            up.ioc,
            [&]() -> awaitable<void> {
                const WireRequest wire(Request{http::verb::get, "http://origin.test/x", 11});
                const auto t0 = Clock::now();
                // Not inside CHECK: Catch's macro names its expression twice, and GCC 12 may await both.
                sent = co_await up.conn.send(wire, t0, t0 + 2s, m);
                done = true;
            },
            [&](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
                up.ioc.stop();
            });
        up.ioc.run_for(10s);
        up.ioc.restart();
        CHECK(done);
        CHECK(sent == LegError::none);
        CHECK(m.ttfb_us);
        CHECK_FALSE(m.retried);
        CHECK(up.server.requests_seen() == 2);
    }
}

TEST_CASE("UpstreamConnection: a POST is never sent twice (RFC 9110 9.2.2)") {
    Upstream up({{send_bytes(kReply)}, {close_conn()}, {send_bytes(kReply)}});
    REQUIRE(up.exchange().sent == LegError::none);
    const auto x = up.exchange(http::verb::post);
    CHECK(x.sent == LegError::closed);
    CHECK_FALSE(x.measure.retried);
    CHECK(up.server.requests_seen() == 2);
}

TEST_CASE("UpstreamConnection: bytes after a reply are a protocol error and end the connection") {
    SECTION("in the same segment as the reply") {
        Upstream up({{send_bytes(kReply + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")}, {send_bytes(kReply)}});
        const auto x = up.exchange();
        CHECK(x.body == kBody);
        CHECK(up.conn.bytes_after_reply());
        CHECK_FALSE(up.conn.is_reusable());
        CHECK_FALSE(up.conn.is_open());
        CHECK(up.conn.buffer_capacity() == 0);
        // The next request goes out on a fresh connection, the stray bytes never read as its reply.
        const auto next = up.exchange();
        CHECK(next.measure.connect_us > 0);
        CHECK(next.body == kBody);
    }
    SECTION("arriving while the connection is idle: found before the next request") {
        Upstream up({{send_bytes(kReply), pause_for(30ms), send_bytes("stray")}, {send_bytes(kReply)}});
        REQUIRE(up.exchange().body == kBody);
        CHECK(up.conn.is_reusable());  // nothing had followed yet
        up.let_server_run();
        const auto next = up.exchange();
        CHECK(next.sent == LegError::none);
        CHECK(next.measure.connect_us > 0);
        CHECK_FALSE(next.measure.retried);
        CHECK(next.body == kBody);
    }
}

TEST_CASE("UpstreamConnection: a connection reused at once carries a GET unprobed, never a POST or after a HEAD") {
    // Probing (a recv per leg) is skipped only where a miss costs nothing: a GET or HEAD that meets a
    // closed connection is sent again. 10 s: every reuse here counts as "at once".
    constexpr auto kAtOnce = std::chrono::seconds(10);
    SECTION("a GET: the peer's close is met, and the GET sent again, once") {
        Upstream up({{send_bytes(kReply), close_conn()}, {send_bytes(kReply)}}, kAtOnce);
        REQUIRE(up.exchange().sent == LegError::none);
        up.let_server_run();
        const auto x = up.exchange();
        CHECK(x.sent == LegError::none);
        CHECK(x.measure.retried);
        CHECK(x.body == kBody);
    }
    SECTION("a POST: a kept-alive connection the peer visibly closed is replaced before it goes out") {
        Upstream up({{send_bytes(kReply), close_conn()}, {send_bytes(kReply)}}, kAtOnce);
        REQUIRE(up.exchange().sent == LegError::none);
        up.let_server_run();
        const auto x = up.exchange(http::verb::post);
        CHECK(x.sent == LegError::none);
        CHECK_FALSE(x.measure.retried);
        CHECK(x.measure.connect_us > 0);
    }
    SECTION("after a HEAD: a body that followed its reply is found, never read as the next reply") {
        Upstream up({{send_bytes("HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n"), pause_for(20ms), send_bytes(kBody)},
                     {send_bytes(kReply)}},
                    kAtOnce);
        REQUIRE(up.exchange(http::verb::head).status == 200u);
        up.let_server_run();
        const auto x = up.exchange();
        CHECK(x.sent == LegError::none);
        CHECK(x.measure.connect_us > 0);
        CHECK(x.body == kBody);
    }
}

TEST_CASE("UpstreamConnection: nothing answering within the deadline is a timeout") {
    Upstream up({{hang_conn()}});
    const auto x = up.exchange(http::verb::get, 200ms);
    CHECK(x.sent == LegError::timeout);
    CHECK_FALSE(x.measure.ttfb_us);
    CHECK_FALSE(up.conn.is_open());
}
