#include "io/upstream_connection.hpp"

#include <boost/asio/write.hpp>

#include <sys/socket.h>

#include <cerrno>

namespace spe {
namespace {

/// Methods sent again after a kept-alive connection failed before any reply
/// byte: GET and HEAD only, which change nothing on the server.
bool may_send_again(http::verb method) {
    return method == http::verb::get || method == http::verb::head;
}

/// Asio's range connect reports a socket it could not open (no descriptor
/// left: EMFILE) as operation_aborted, which reads like a cancel; asking the
/// system again gives the real reason. Only on a failed connect.
error_code connect_failure(error_code ec, tcp::socket& socket, const std::vector<tcp::endpoint>& endpoints) {
    if (ec != asio::error::operation_aborted || socket.is_open() || endpoints.empty()) return ec;
    error_code open_ec;
    socket.open(endpoints.front().protocol(), open_ec);
    if (open_ec) return open_ec;
    socket.close(open_ec);
    return ec;
}

}  // namespace

UpstreamConnection::UpstreamConnection(const asio::any_io_executor& ex, const std::vector<tcp::endpoint>& endpoints,
                                       std::size_t buffer_limit, Clock::duration probe_after)
    : stream_(ex), buffer_(buffer_limit), endpoints_(endpoints), probe_after_(probe_after) {}

awaitable<LegError> UpstreamConnection::send(const WireRequest& req, Clock::time_point t0, Clock::time_point deadline,
                                             Measure& m) {
    started_ = t0;
    reusable_ = bytes_after_reply_ = false;
    const bool may_retry = may_send_again(req.method());
    // An idle connection that has something to read cannot carry a request:
    // the peer closed it, or sent bytes nobody asked for (e.g. a HEAD reply's
    // body arriving after its leg ended), which would be read as this reply.
    if (is_open() && worth_probing(req.method(), t0) && peer_gone()) close();
    last_was_head_ = req.method() == http::verb::head;
    const bool reused = is_open();
    auto err = co_await send_once(req, t0, deadline, m);
    // send_once fails only before the first reply byte. A kept-alive
    // connection the peer closed while idle ends so; a GET or HEAD is sent
    // again on a fresh connection (RFC 9110 9.2.2: never any other method,
    // the peer may have acted on it).
    if (reused && may_retry && (err == LegError::closed || err == LegError::reset) && Clock::now() < deadline) {
        close();
        m = Measure{};
        m.retried = true;
        started_ = Clock::now();
        err = co_await send_once(req, started_, deadline, m);
    }
    co_return err;
}

bool UpstreamConnection::worth_probing(http::verb method, Clock::time_point now) const {
    // A system call per leg of every request (five of a request's twenty at 4-way) to learn what is
    // almost never so under load: peers close idle kept-alive connections after seconds, and a GET or
    // HEAD that meets a closed one is sent again anyway. Any other method must not meet one; a HEAD's
    // reply is the one a stray body follows; a longer idle time is when peers do close.
    return !may_send_again(method) || last_was_head_ || now - idle_since_ >= probe_after_;
}

bool UpstreamConnection::peer_gone() {
    char byte = 0;
    const auto n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

awaitable<LegError> UpstreamConnection::send_once(const WireRequest& req, Clock::time_point t0,
                                                  Clock::time_point deadline, Measure& m) {
    error_code ec;
    if (!is_open()) {
        buffer_.clear();
        stream_.expires_at(deadline);
        co_await stream_.async_connect(endpoints_, with_ec(ec));
        m.connect_us = micros_since(t0);
        if (ec) {
            ec = connect_failure(ec, stream_.socket(), endpoints_);
            m.error_detail = "connect: " + ec.message();
            close();
            co_return classify(ec, false);
        }
        stream_.socket().set_option(tcp::no_delay(true), ec);
    } else {
        m.connect_us = 0;
    }
    stream_.expires_at(deadline);
    co_await asio::async_write(stream_, req.buffers(), with_ec(ec));
    if (ec) {
        m.error_detail = "sending the request: " + ec.message();
        close();
        co_return classify(ec, false);
    }
    // Wait for the first byte separately so the time to first byte is exact;
    // the header parser then consumes what this read buffered.
    auto n = co_await stream_.async_read_some(buffer_.prepare(std::min<std::size_t>(16 * 1024, buffer_.max_size())),
                                              with_ec(ec));
    buffer_.commit(n);
    if (ec) {
        m.error_detail = "waiting for the reply: " + ec.message();
        close();
        co_return classify(ec, false);
    }
    m.ttfb_us = micros_since(t0);
    co_return LegError::none;
}

void UpstreamConnection::end_reply(bool keep_alive) {
    error_code ec;
    // A last read that got less than it asked for found the receive queue
    // empty: no need to ask the kernel again (bytes arriving later are missed
    // either way).
    bytes_after_reply_ =
        buffer_.size() > 0 || (stream_.last_read_filled_buffer() && stream_.socket().available(ec) > 0);
    reusable_ = keep_alive && !bytes_after_reply_ && !ec;
    if (!reusable_) close();
    idle_since_ = Clock::now();
    // Idle connections are pooled, their buffers and timer waits are not: the
    // next request allocates them again (a few allocations per request instead
    // of 16 KiB and a queued wait per idle connection).
    buffer_.shrink_to_fit();
    stream_.disarm();
}

void UpstreamConnection::close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    buffer_.clear();
    buffer_.shrink_to_fit();
    stream_.disarm();
}

}  // namespace spe
