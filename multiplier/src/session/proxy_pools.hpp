// The connections one client connection holds to each proxy under test. They
// mirror the client's persistence: kept alive while the client connection
// lives, at most one outstanding request each (a busy one means a new one,
// as in ROPE), closed when the client leaves (at once where no leg of its is
// still to come, else after the last one). Also whose turn it is at each
// proxy: the client's requests reach each proxy in the client's order, one at
// a time (proxy_turns.hpp). Used on their own executor (the fan-out's);
// client_closed(), abort() and next_sequence() may be called from anywhere.
// The client is never held back for them (a proxy must not change how fast the
// client is served): a proxy that falls too far behind gets no more legs until it
// catches up (--max-queued-legs, Fanout::send_in_turn).
#pragma once

#include "io/upstream_connection.hpp"
#include "session/proxy_turns.hpp"
#include "session/server_context.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace spe {

class ProxyPools : public Abortable, public std::enable_shared_from_this<ProxyPools> {
public:
    ProxyPools(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies, std::size_t max_per_proxy,
               std::size_t buffer_limit);

    /// An idle kept-alive connection, a new one, or nullptr when the proxy
    /// already has max_per_proxy requests outstanding for this client.
    std::unique_ptr<UpstreamConnection> acquire(std::size_t proxy);
    void release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn);

    /// The client connection is gone: close the idle connections of the proxies done with all its
    /// fan-outs. A connection a later leg will still use stays for it, and the last leg closes it.
    void client_closed();
    const asio::any_io_executor& executor() const { return strand_; }

    /// The client's side, once per fan-out in the client's order: its number among this
    /// connection's fan-outs. Every number given must be passed at every proxy (pass_all).
    std::uint64_t next_sequence() { return issued_++; }
    /// The fan-out executor has taken a fan-out's reference (any thread may ask how far behind it is).
    void reference_taken() { ++taken_; }
    /// This connection's fan-outs whose reference the fan-out executor has not taken yet: how far
    /// SPE's own measuring work (validation, judging) is behind the client, whatever the proxies do.
    /// The client is not read from while it is above --max-fanout-backlog (DownstreamSession::
    /// keep_pace_with_measuring): under overload SPE's memory stays bounded by its own pace, never by
    /// a proxy's (a hanging proxy does not delay take_reference).
    std::uint64_t backlog() const { return issued_.load() - taken_.load(); }
    /// How many of this connection's fan-outs before `seq` `proxy` is not done with yet (a leg is not
    /// sent past --max-queued-legs of them).
    std::uint64_t ahead(std::size_t proxy, std::uint64_t seq) const { return turns_.ahead(proxy, seq); }

    enum class TurnWait { turn, timed_out, aborted };
    /// Waits until fan-out `seq` may send its leg to `proxy`: woken when the fan-out
    /// before it passes, never polled. It gives up (timed_out) after `per_fanout`, the longest
    /// one fan-out may take with this proxy, however many legs are ahead of it: a proxy that
    /// falls behind the client (a hanging one) loses legs, rather than queueing them ever
    /// longer and holding back the records that wait for them.
    awaitable<TurnWait> await_turn(std::size_t proxy, std::uint64_t seq, Clock::duration per_fanout);
    /// Fan-out `seq` is done with `proxy` (its leg ended, or none is sent). Idempotent.
    void pass_turn(std::size_t proxy, std::uint64_t seq);
    /// Fan-out `seq` sends no (further) legs: it is done with every proxy.
    void pass_all(std::uint64_t seq);
    void abort() override;

private:
    struct Pool {
        std::vector<std::unique_ptr<UpstreamConnection>> idle;
        std::set<UpstreamConnection*> busy;  // observers only; the legs own them
    };
    asio::any_io_executor strand_;
    const std::vector<ResolvedProxy>& proxies_;
    std::size_t max_per_proxy_;
    std::size_t buffer_limit_;
    std::vector<Pool> pools_;
    bool aborted_ = false;
    bool client_gone_ = false;  // client_closed() ran (on the strand)
    ProxyTurns turns_;
    // Per proxy, the legs waiting for their turn, by fan-out: observers of timers their
    // coroutines own (each erases itself before its timer goes); cancelled to wake them.
    std::vector<std::map<std::uint64_t, asio::steady_timer*>> waiting_;
    std::atomic<std::uint64_t> issued_{0};  // fan-out numbers given (the client's side)
    std::atomic<std::uint64_t> taken_{0};   // fan-outs whose reference the fan-out executor took
};

}  // namespace spe
