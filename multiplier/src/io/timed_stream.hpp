// A TCP stream whose reads and writes have deadlines, enforced by ONE timer
// per connection that is rarely re-armed.
//
// Beast's tcp_stream starts a timer wait for every read and write and cancels
// it when the operation completes: with the Multiplier's short operations that
// was about five timerfd_settime calls and extra reactor wake-ups per client
// request. Here a deadline is a time point stored in the stream; the timer is
// armed only when an operation's deadline is earlier than the one it is
// already armed for. When it fires it closes the socket if a pending operation
// is past its deadline (that operation completes with beast::error::timeout,
// as with tcp_stream), or re-arms for the earliest pending deadline, or stays
// idle when nothing is pending. A kept-alive connection whose deadlines keep
// moving forward costs one timer wake-up per timeout period, not per operation.
//
// Semantics follow beast::tcp_stream: expires_after/expires_at set the
// deadline of the next read and of the next write (a direction with an
// operation pending keeps the deadline it started with); the deadline stays
// in force until set again; at most one read and one write may be pending.
// move_deadlines also moves the deadlines of pending operations.
#pragma once

#include "core/net.hpp"

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include <memory>

namespace spe {

class TimedStream {
    struct Impl;

public:
    using executor_type = asio::any_io_executor;

    explicit TimedStream(const executor_type& ex);
    /// Adopts a connected socket (from accept); its executor is the stream's.
    explicit TimedStream(tcp::socket socket);
    ~TimedStream();
    TimedStream(const TimedStream&) = delete;
    TimedStream& operator=(const TimedStream&) = delete;

    executor_type get_executor() noexcept { return impl_->socket.get_executor(); }
    tcp::socket& socket() { return impl_->socket; }
    const tcp::socket& socket() const { return impl_->socket; }

    void expires_after(Clock::duration d) { expires_at(Clock::now() + d); }
    void expires_at(Clock::time_point t);
    /// Like expires_at, but also for the operations already pending: a tunnel
    /// waiting to read from one side stays open while bytes flow the other way.
    void move_deadlines(Clock::time_point t);

    /// Cancels pending operations (they complete with operation_aborted); the socket stays open.
    void cancel();
    /// For a connection that will wait unused (a pooled upstream connection):
    /// with no operation pending, drops the timer's wait, which would otherwise
    /// stay queued (an allocation) until its deadline. The next operation arms it again.
    void disarm();
    /// A timer wait is queued (for tests).
    bool armed() const { return impl_->armed_for != Clock::time_point::max(); }
    void close();

    /// False when the last completed read got fewer bytes than it asked for:
    /// the socket's receive queue was empty then, so asking the kernel how
    /// many bytes wait (an ioctl) can be skipped.
    bool last_read_filled_buffer() const { return impl_->last_read_full; }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& b) {
                const auto asked = asio::buffer_size(b);
                start(Direction::read);
                impl_->socket.async_read_some(b, Completion<std::decay_t<decltype(handler)>, true>{
                                                     impl_, Direction::read, asked, std::move(handler)});
            },
            token, buffers);
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto handler, const ConstBufferSequence& b) {
                start(Direction::write);
                impl_->socket.async_write_some(b, Completion<std::decay_t<decltype(handler)>, true>{
                                                      impl_, Direction::write, 0, std::move(handler)});
            },
            token, buffers);
    }

    /// Connects to the first endpoint that accepts, under the write deadline
    /// (as tcp_stream does); completes with the error only.
    template <class Token>
    auto async_connect(const std::vector<tcp::endpoint>& endpoints, Token&& token) {
        return asio::async_initiate<Token, void(error_code)>(
            [this](auto handler, const std::vector<tcp::endpoint>* eps) {
                start(Direction::connect);
                auto impl = impl_;
                // After a timeout, no further endpoint is tried.
                asio::async_connect(
                    impl_->socket, *eps,
                    [impl](const error_code&, const tcp::endpoint&) { return !impl->write_timed_out; },
                    Completion<std::decay_t<decltype(handler)>, false>{impl_, Direction::connect, 0,
                                                                       std::move(handler)});
            },
            token, &endpoints);
    }

    /// Waits, under the read deadline, until the socket is readable (data or
    /// end of stream) without reading: a connection between requests needs no
    /// buffer or parser until its next request arrives. Completes with the error only.
    template <class Token>
    auto async_wait_readable(Token&& token) {
        return asio::async_initiate<Token, void(error_code)>(
            [this](auto handler) {
                start(Direction::wait);
                impl_->socket.async_wait(tcp::socket::wait_read, Completion<std::decay_t<decltype(handler)>, false>{
                                                                     impl_, Direction::wait, 0, std::move(handler)});
            },
            token);
    }

private:
    enum class Direction { read, write, connect, wait };  // wait: for readability, a read that takes no bytes

    struct Impl : std::enable_shared_from_this<Impl> {
        explicit Impl(tcp::socket s);
        void arm(Clock::time_point deadline);
        void on_timer(const error_code& ec);
        /// Marks the direction idle; returns the error the operation reports.
        error_code finish(Direction d, error_code ec, std::size_t n, std::size_t asked);

        tcp::socket socket;
        asio::steady_timer timer;
        Clock::time_point read_deadline = Clock::time_point::max();
        Clock::time_point write_deadline = Clock::time_point::max();
        Clock::time_point armed_for = Clock::time_point::max();  // max: no wait pending
        bool read_pending = false;
        bool write_pending = false;
        // The watchdog closed the socket because this direction's pending
        // operation was past its deadline: that operation reports timeout.
        bool read_timed_out = false;
        bool write_timed_out = false;
        bool last_read_full = true;
    };

    /// One operation's completion: its direction marked idle (or timed out) before the
    /// caller's handler runs. Reads and writes report their byte count; connect and
    /// wait (`Bytes` false) report the error only, a connect's endpoint dropped.
    template <class Handler, bool Bytes>
    struct Completion {
        std::shared_ptr<Impl> impl;
        Direction direction;
        std::size_t asked;  // a read's buffer size (last_read_filled_buffer); 0 otherwise
        Handler handler;

        using executor_type = asio::associated_executor_t<Handler, asio::any_io_executor>;
        executor_type get_executor() const noexcept {
            return asio::get_associated_executor(handler, impl->socket.get_executor());
        }
        using allocator_type = asio::associated_allocator_t<Handler>;
        allocator_type get_allocator() const noexcept { return asio::get_associated_allocator(handler); }

        void operator()(error_code ec, std::size_t n) requires Bytes {
            ec = impl->finish(direction, ec, n, asked);
            auto keep = std::move(impl);  // the stream may be destroyed by the handler
            std::move(handler)(ec, n);
        }

        template <class... Ignored>
        void operator()(error_code ec, const Ignored&...) requires(!Bytes) {
            ec = impl->finish(direction, ec, 0, 0);
            auto keep = std::move(impl);
            std::move(handler)(ec);
        }
    };

    void start(Direction d);

    std::shared_ptr<Impl> impl_;
};

}  // namespace spe
