#include "io/timed_stream.hpp"

#include <algorithm>

namespace spe {

TimedStream::Impl::Impl(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}

TimedStream::TimedStream(const executor_type& ex) : impl_(std::make_shared<Impl>(tcp::socket(ex))) {}

TimedStream::TimedStream(tcp::socket socket) : impl_(std::make_shared<Impl>(std::move(socket))) {}

TimedStream::~TimedStream() {
    // Pending operations and the timer wait hold the Impl; they complete with
    // operation_aborted and release it.
    error_code ignored;
    impl_->socket.close(ignored);
    impl_->timer.cancel();
}

void TimedStream::expires_at(Clock::time_point t) {
    if (!impl_->read_pending) impl_->read_deadline = t;
    if (!impl_->write_pending) impl_->write_deadline = t;
}

void TimedStream::move_deadlines(Clock::time_point t) {
    auto& s = *impl_;
    s.read_deadline = t;
    s.write_deadline = t;
    // A later deadline needs nothing now: the wake-up already armed finds no
    // operation late and re-arms for the new one. An earlier one must be armed.
    if (s.read_pending || s.write_pending) s.arm(t);
}

void TimedStream::cancel() {
    error_code ignored;
    impl_->socket.cancel(ignored);
}

void TimedStream::disarm() {
    auto& s = *impl_;
    if (s.read_pending || s.write_pending || s.armed_for == Clock::time_point::max()) return;
    s.armed_for = Clock::time_point::max();
    s.timer.cancel();  // on_timer sees operation_aborted and leaves armed_for alone
}

void TimedStream::close() {
    error_code ignored;
    impl_->socket.close(ignored);
}

void TimedStream::start(Direction d) {
    auto& s = *impl_;
    Clock::time_point deadline;
    if (d == Direction::read || d == Direction::wait) {
        s.read_pending = true;
        s.read_timed_out = false;
        deadline = s.read_deadline;
    } else {
        s.write_pending = true;
        s.write_timed_out = false;
        if (d == Direction::connect) s.read_pending = true;  // a connect occupies both directions
        deadline = s.write_deadline;
    }
    s.arm(deadline);
}

void TimedStream::Impl::arm(Clock::time_point deadline) {
    // Armed for an earlier (or the same) time already: that wake-up re-checks.
    if (deadline == Clock::time_point::max() || armed_for <= deadline) return;
    armed_for = deadline;
    timer.expires_at(deadline);  // cancels a later wait still pending
    timer.async_wait([self = shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

void TimedStream::Impl::on_timer(const error_code& ec) {
    if (ec == asio::error::operation_aborted) return;  // superseded by an earlier deadline, or the stream is gone
    armed_for = Clock::time_point::max();
    const auto now = Clock::now();
    const bool read_late = read_pending && now >= read_deadline;
    const bool write_late = write_pending && now >= write_deadline;
    if (read_late || write_late) {
        read_timed_out = read_late;
        write_timed_out = write_late;
        error_code ignored;
        socket.close(ignored);
        return;
    }
    auto next = Clock::time_point::max();
    if (read_pending) next = std::min(next, read_deadline);
    if (write_pending) next = std::min(next, write_deadline);
    arm(next);
}

error_code TimedStream::Impl::finish(Direction d, error_code ec, std::size_t n, std::size_t asked) {
    bool timed_out = false;
    if (d == Direction::read || d == Direction::wait) {
        read_pending = false;
        timed_out = std::exchange(read_timed_out, false);
        if (!ec && d == Direction::read) last_read_full = n == asked;
    } else {
        write_pending = false;
        if (d == Direction::connect) read_pending = false;
        timed_out = std::exchange(write_timed_out, false);
    }
    if (timed_out && ec) return beast::error::timeout;
    return ec;
}

}  // namespace spe
