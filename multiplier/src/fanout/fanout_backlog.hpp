// How far SPE's own measuring is behind one client connection: the fan-outs
// numbered on the client's side, counted again once the fan-out executor has
// taken each one's reference. The client is not read from while the difference
// is above --max-fanout-backlog (DownstreamSession::keep_pace_with_measuring):
// under overload SPE's memory stays bounded by its own pace, never by a
// proxy's (a hanging proxy does not delay taking a reference). Any thread may
// ask.
#pragma once

#include <atomic>
#include <cstdint>

namespace spe {

class FanoutBacklog {
public:
    /// The client's side, once per fan-out in the client's order: its number among this connection's
    /// fan-outs (every number given must be passed at every proxy: ProxyTurnQueue::pass_all).
    std::uint64_t next_sequence() { return issued_++; }
    /// The fan-out executor has taken a fan-out's reference.
    void reference_taken() { ++taken_; }
    /// The fan-outs numbered so far: the number the next one gets.
    std::uint64_t issued() const { return issued_.load(); }
    /// Fan-outs whose reference the fan-out executor has not taken yet.
    std::uint64_t backlog() const { return issued_.load() - taken_.load(); }

private:
    std::atomic<std::uint64_t> issued_{0};
    std::atomic<std::uint64_t> taken_{0};
};

}  // namespace spe
