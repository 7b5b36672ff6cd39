// Moving opaque bytes both ways between two connections (a CONNECT tunnel, a
// WebSocket after its upgrade): one idle deadline shared by both directions,
// and a copy loop per direction that half-closes the other side at the end.
#pragma once

#include "http/read_buffer.hpp"
#include "io/timed_stream.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstdint>

namespace spe {

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
/// half-closes `to_transport` (the TCP connection under `to`) so the peer sees
/// the end too. Returns the bytes copied.
template <class From, class To>
awaitable<std::uint64_t> pump(From& from, To& to, TimedStream& to_transport, IdleDeadline& idle) {
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
    to_transport.socket().shutdown(tcp::socket::shutdown_send, ec);
    co_return total;
}

/// Bytes one side sent ahead (read into our buffer already) go first; they
/// count in that direction's total.
template <class To>
awaitable<bool> flush_ahead(ReadBuffer& buffer, To& to, TimedStream& to_transport, std::chrono::milliseconds idle,
                            std::uint64_t& total) {
    if (buffer.size() == 0) co_return true;
    error_code ec;
    to_transport.expires_after(idle);
    total += co_await asio::async_write(to, buffer.data(), with_ec(ec));
    buffer.consume(buffer.size());
    co_return !ec;
}

/// Bytes counted each way once both directions have ended.
struct PumpedBytes {
    std::uint64_t up = 0;    // client to upstream
    std::uint64_t down = 0;  // upstream to client
};

/// Both directions at once until both end: client-to-upstream runs beside the
/// caller; a timer set to "never" is the signal that it finished (cancelling
/// it wakes the wait). `client_transport` and `upstream` carry the deadlines.
template <class Client>
awaitable<PumpedBytes> pump_both_ways(Client& client, TimedStream& client_transport, TimedStream& upstream,
                                      std::chrono::milliseconds idle_timeout) {
    PumpedBytes bytes;
    asio::steady_timer up_done(client_transport.get_executor(), asio::steady_timer::time_point::max());
    bool up_running = true;
    IdleDeadline idle(client_transport, upstream, idle_timeout);
    idle.traffic();
    asio::co_spawn(client_transport.get_executor(), pump(client, upstream, upstream, idle),
                   [&](std::exception_ptr, std::uint64_t n) {
                       bytes.up = n;
                       up_running = false;
                       up_done.cancel();
                   });
    bytes.down = co_await pump(upstream, client, client_transport, idle);
    error_code ec;
    if (up_running) co_await up_done.async_wait(with_ec(ec));
    co_return bytes;
}

}  // namespace spe
