#include "connect_tunnel.hpp"

#include "header_policy.hpp"
#include "upstream_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>
#include <array>

namespace spe {
namespace {

/// The tunnel's one idle deadline, shared by both directions: bytes moving
/// either way push it back on both streams, pending reads and writes included,
/// so a download the client never answers (or an upload) is not idle.
class IdleDeadline {
public:
    IdleDeadline(TimedStream& a, TimedStream& b, std::chrono::milliseconds idle) : a_(a), b_(b), idle_(idle) {}
    void traffic() {
        const auto t = Clock::now() + idle_;
        a_.move_deadlines(t);
        b_.move_deadlines(t);
    }

private:
    TimedStream& a_;
    TimedStream& b_;
    std::chrono::milliseconds idle_;
};

/// Copies bytes one way until EOF, error or the tunnel's idle timeout, then
/// half-closes the other side so the peer sees the end too. Returns the bytes copied.
awaitable<std::uint64_t> pump(TimedStream& from, TimedStream& to, IdleDeadline& idle) {
    std::array<char, 16 * 1024> buf{};
    std::uint64_t total = 0;
    error_code ec;
    for (;;) {
        auto n = co_await from.async_read_some(asio::buffer(buf), with_ec(ec));
        if (ec) break;
        idle.traffic();
        co_await asio::async_write(to, asio::buffer(buf.data(), n), with_ec(ec));
        if (ec) break;
        idle.traffic();
        total += n;
    }
    to.socket().shutdown(tcp::socket::shutdown_send, ec);
    co_return total;
}

/// Bytes one side sent ahead (read into our buffer already) go first; they
/// count in that direction's total.
awaitable<bool> flush_ahead(ReadBuffer& buffer, TimedStream& to, std::chrono::milliseconds idle, std::uint64_t& total) {
    if (buffer.size() == 0) co_return true;
    error_code ec;
    to.expires_after(idle);
    total += co_await asio::async_write(to, buffer.data(), with_ec(ec));
    buffer.consume(buffer.size());
    co_return !ec;
}

}  // namespace

std::string connection_established(const std::string& via_name) {
    return "HTTP/1.1 200 Connection established\r\nVia: 1.1 " + via_name + "\r\n\r\n";
}

awaitable<TunnelOutcome> run_connect_tunnel(TimedStream& client, ReadBuffer& client_buffer, const TunnelRequest& tunnel,
                                            ServerContext& ctx, RequestRecord& record) {
    const auto& cfg = ctx.config();
    const auto target = tunnel.target.host + ":" + std::to_string(tunnel.target.port);
    Request message{http::verb::connect, target, 11};
    message.set(http::field::host, target);
    append_via(message, tunnel.client_version, cfg.via_name);
    const WireRequest connect(std::move(message));
    UpstreamConnection upstream(client.get_executor(), ctx.collector(), read_buffer_limit(cfg));
    Measure& m = record.collector;
    const auto t0 = Clock::now();
    if (auto e = co_await upstream.send(connect, t0, t0 + cfg.client_timeout, m); e != LegError::none) {
        m.error = e;
        co_return TunnelOutcome{client_status_for(e),
                                "the Collector could not be reached: " + std::string(to_string(e))};
    }
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a 2xx reply to CONNECT has no body: the tunnel starts right after it
    error_code ec;
    upstream.stream().expires_after(cfg.client_timeout);
    m.header_bytes = co_await http::async_read_header(upstream.stream(), upstream.buffer(), parser, with_ec(ec));
    if (ec) {
        m.error = classify(ec, false);
        co_return TunnelOutcome{502, "the Collector's reply to CONNECT was unreadable: " + ec.message()};
    }
    m.status = parser.get().result_int();
    m.version = parser.get().version();
    if (*m.status / 100 != 2)
        co_return TunnelOutcome{*m.status, "the Collector refused the tunnel: " + std::to_string(*m.status) + " " +
                                               std::string(parser.get().reason())};

    if (!tunnel.established) {
        const auto established = connection_established(cfg.via_name);
        client.expires_after(cfg.client_timeout);
        co_await asio::async_write(client, asio::buffer(established), with_ec(ec));
    }
    record.client_status = 200;
    std::uint64_t up_bytes = 0, down_bytes = 0;
    if (ec || !co_await flush_ahead(upstream.buffer(), client, cfg.client_timeout, down_bytes) ||
        !co_await flush_ahead(client_buffer, upstream.stream(), cfg.client_timeout, up_bytes))
        co_return TunnelOutcome{};

    // Client-to-Collector runs beside us; a timer set to "never" is the signal
    // that it finished (cancelling it wakes the wait below).
    asio::steady_timer up_done(client.get_executor(), asio::steady_timer::time_point::max());
    bool up_running = true;
    IdleDeadline idle(client, upstream.stream(), cfg.client_timeout);
    idle.traffic();
    asio::co_spawn(client.get_executor(), pump(client, upstream.stream(), idle),
                   [&](std::exception_ptr, std::uint64_t n) {
                       up_bytes += n;
                       up_running = false;
                       up_done.cancel();
                   });
    m.bytes = down_bytes + co_await pump(upstream.stream(), client, idle);
    if (up_running) co_await up_done.async_wait(with_ec(ec));
    m.total_us = micros_since(t0);
    record.note = "CONNECT tunnel (not multiplied" + (tunnel.why.empty() ? "" : ": " + tunnel.why) +
                  "): " + std::to_string(up_bytes) + " bytes up, " + std::to_string(m.bytes) + " bytes down";
    co_return TunnelOutcome{};
}

}  // namespace spe
