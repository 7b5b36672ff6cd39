// The legs of one client connection's fan-outs waiting for their turn at each
// proxy (the turns themselves: proxy_turns.hpp). A leg waits until the fan-out
// before it passes, woken then, never polled, but only until its deadline
// (--order-wait): then the fan-outs ahead of it are set aside and it goes, on
// another connection, recorded as having overtaken them. A proxy that hangs on
// one request loses that request only, and one slower than the client gets
// every request a little out of order instead of losing most of them. Used on
// its strand (the connection's fan-out executor).
#pragma once

#include "context/order_ticket.hpp"
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

    /// How a leg's wait for its turn ended. `turn`: in order; `set_aside`: a later leg moved the turn past it, so it
    /// goes now, out of order; `gave_up`: its deadline came first and it set aside the fan-outs ahead of it; `aborted`:
    /// the Multiplier is stopping.
    enum class Wait { turn, set_aside, gave_up, aborted };
    /// Waits until fan-out `seq` may send its leg to `proxy`, until `deadline` at most.
    awaitable<Wait> await_turn(std::size_t proxy, std::uint64_t seq, Clock::time_point deadline);
    /// Fan-out `seq` exists, with what a leg overtaking it needs to know. Before its legs wait.
    void enter(std::uint64_t seq, const OrderTicket& ticket) { tickets_[seq] = ticket; }
    /// Fan-out `seq` is done with `proxy` (its leg ended, or none is sent). Idempotent.
    void pass(std::size_t proxy, std::uint64_t seq);
    /// Fan-out `seq` sends no (further) legs: it is done with every proxy.
    void pass_all(std::uint64_t seq);
    /// Fan-out `seq` is gone: done with every proxy, and forgotten.
    void leave(std::uint64_t seq);
    /// How many fan-outs before `seq` `proxy` is not done with yet.
    std::uint64_t ahead(std::size_t proxy, std::uint64_t seq) const { return turns_.ahead(proxy, seq); }
    /// The earlier fan-outs set aside at `proxy` and still out: those `seq`'s leg, sent now, overtakes.
    std::vector<OrderTicket> overtaken(std::size_t proxy, std::uint64_t seq) const;
    /// Wakes every waiting leg with Wait::aborted, and any later one at once.
    void abort();

private:
    void wake(std::size_t proxy, std::uint64_t seq);
    asio::any_io_executor strand_;
    ProxyTurns turns_;
    // Per proxy, the legs waiting for their turn, by fan-out: observers of timers their
    // coroutines own (each erases itself before its timer goes); cancelled to wake them.
    std::vector<std::map<std::uint64_t, asio::steady_timer*>> waiting_;
    std::map<std::uint64_t, OrderTicket> tickets_;  // the connection's fan-outs still alive
    bool aborted_ = false;
};

}  // namespace spe
