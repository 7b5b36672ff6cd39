// One connection to one upstream (the Collector or a proxy under test):
// connect or reuse, send a request, wait for the first reply byte; every step
// under the caller's deadline. Reading the reply is the caller's business
// (streamed to the client for the Collector, measured for a proxy).
#pragma once

#include "core/errors.hpp"
#include "core/measurement.hpp"
#include "core/net.hpp"
#include "http/wire_request.hpp"
#include "io/timed_stream.hpp"

#include "http/parse_buffered.hpp"  // its readers parse what it buffered first
#include "http/read_buffer.hpp"

#include <vector>

namespace spe {

class UpstreamConnection {
public:
    /// How long a kept-alive connection may have been idle and still carry a GET or HEAD unprobed.
    static constexpr Clock::duration kProbeAfter = std::chrono::milliseconds(50);

    /// `buffer_limit`: most bytes held unparsed (a header block, long chunk extensions ...);
    /// `probe_after`: kProbeAfter but in tests.
    UpstreamConnection(const asio::any_io_executor& ex, const std::vector<tcp::endpoint>& endpoints,
                       std::size_t buffer_limit, Clock::duration probe_after = kProbeAfter);

    /// Connects unless a kept-alive connection is open, writes `req` and waits
    /// until the first reply byte is buffered. Sets m.connect_us and m.ttfb_us
    /// relative to `t0`.
    ///
    /// A kept-alive connection the peer closed while it was idle fails only
    /// once the request is out, and then nobody can tell whether the peer saw
    /// it. So (RFC 9110 9.2.2) only a GET or HEAD that got no reply byte is
    /// sent again, once, on a fresh connection: m.retried is set and the
    /// times count from the start of that second attempt (started()), so the
    /// failed one is not charged to the peer. Before any other method goes
    /// out on a kept-alive connection, a connection the peer has visibly
    /// closed is replaced first; so is one idle for `probe_after` or more, or
    /// after a HEAD, that has anything to read (see peer_gone).
    awaitable<LegError> send(const WireRequest& req, Clock::time_point t0, Clock::time_point deadline, Measure& m);
    /// The start of the attempt the reply belongs to: the last send's `t0`, or
    /// when it sent the request again. The caller's total time counts from it.
    Clock::time_point started() const { return started_; }

    /// After a reply read to its end: the connection stays open for the next
    /// request only if the reply allowed it (`keep_alive`) and nothing
    /// unexpected follows it; either way the read buffer is freed and the
    /// deadline timer disarmed (a kept-alive connection waits with neither).
    void end_reply(bool keep_alive);
    /// Bytes followed the last reply, though nobody asked for them: a protocol error.
    bool bytes_after_reply() const { return bytes_after_reply_; }
    /// May carry another request: open, and its last reply ended as end_reply wants.
    bool is_reusable() const { return reusable_ && is_open(); }

    void close();
    bool is_open() const { return stream_.socket().is_open(); }
    TimedStream& stream() { return stream_; }
    ReadBuffer& buffer() { return buffer_; }
    /// Bytes the read buffer holds allocated (0 between requests).
    std::size_t buffer_capacity() const { return buffer_.capacity(); }
    /// Between requests no timer wait is queued either.
    bool timer_armed() const { return stream_.armed(); }

private:
    /// True if the peer has closed this (idle, kept-alive) connection or sent
    /// bytes nobody asked for: it cannot carry a request.
    bool peer_gone();
    /// Whether to ask the kernel (peer_gone) before sending `method` on the kept-alive connection.
    bool worth_probing(http::verb method, Clock::time_point now) const;
    awaitable<LegError> send_once(const WireRequest& req, Clock::time_point t0, Clock::time_point deadline, Measure& m);

    TimedStream stream_;
    ReadBuffer buffer_;
    const std::vector<tcp::endpoint>& endpoints_;
    const Clock::duration probe_after_;
    Clock::time_point started_{};
    Clock::time_point idle_since_{};  // when the last reply ended
    bool last_was_head_ = false;
    bool reusable_ = false;
    bool bytes_after_reply_ = false;
};

}  // namespace spe
