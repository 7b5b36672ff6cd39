// The legs of one client connection's fan-outs waiting for their turn at each
// proxy (the turns themselves: proxy_turns.hpp). A leg waits until the fan-out
// before it passes, woken then, never polled, and gives up after the longest
// one fan-out may take with that proxy, however many legs are ahead of it: a
// proxy that falls behind the client (a hanging one) loses legs, rather than
// queueing them ever longer and holding back the records that wait for them.
// Used on its strand (the connection's fan-out executor).
#pragma once

#include "core/net.hpp"
#include "core/steady_clock.hpp"
#include "fanout/proxy_turns.hpp"

#include <boost/asio/steady_timer.hpp>

#include <map>
#include <vector>

namespace spe {

class ProxyTurnQueue {
public:
    ProxyTurnQueue(asio::any_io_executor strand, std::size_t proxies);

    enum class Wait { turn, timed_out, aborted };
    /// Waits until fan-out `seq` may send its leg to `proxy`, `per_fanout` at most.
    awaitable<Wait> await_turn(std::size_t proxy, std::uint64_t seq, Clock::duration per_fanout);
    /// Fan-out `seq` is done with `proxy` (its leg ended, or none is sent). Idempotent.
    void pass(std::size_t proxy, std::uint64_t seq);
    /// Fan-out `seq` sends no (further) legs: it is done with every proxy.
    void pass_all(std::uint64_t seq);
    /// How many fan-outs before `seq` `proxy` is not done with yet.
    std::uint64_t ahead(std::size_t proxy, std::uint64_t seq) const { return turns_.ahead(proxy, seq); }
    /// Wakes every waiting leg with Wait::aborted, and any later one at once.
    void abort();

private:
    asio::any_io_executor strand_;
    ProxyTurns turns_;
    // Per proxy, the legs waiting for their turn, by fan-out: observers of timers their
    // coroutines own (each erases itself before its timer goes); cancelled to wake them.
    std::vector<std::map<std::uint64_t, asio::steady_timer*>> waiting_;
    bool aborted_ = false;
};

}  // namespace spe
