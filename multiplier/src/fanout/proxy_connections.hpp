// The connections one client connection holds to each proxy under test. They
// mirror the client's persistence: kept alive while the client connection
// lives, at most one outstanding request each (a busy one means a new one, as
// in ROPE), closed when the client leaves (ClientFanouts decides when). A leg
// that finds all --max-conns-per-proxy of them busy waits for one until its
// deadline: only a proxy that holds every connection it is given loses legs.
// Used on their strand (the connection's fan-out executor).
#pragma once

#include "context/server_context.hpp"
#include "core/steady_clock.hpp"
#include "io/upstream_connection.hpp"

#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <set>
#include <vector>

namespace spe {

class ProxyConnections {
public:
    ProxyConnections(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies, std::size_t max_per_proxy,
                     std::size_t buffer_limit);

    /// An idle kept-alive connection, a new one, or, when the proxy already has max_per_proxy requests
    /// outstanding for this client, the first one released before `deadline`; nullptr after it.
    awaitable<std::unique_ptr<UpstreamConnection>> acquire(std::size_t proxy, Clock::time_point deadline);
    /// The leg is done with `conn`: kept idle for the next leg when `keep` and it can carry one, else closed.
    void release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn, bool keep);
    /// Closes `proxy`'s idle connections (busy ones close when their leg releases them).
    void close_idle(std::size_t proxy) { pools_.at(proxy).idle.clear(); }
    std::size_t proxies() const { return pools_.size(); }
    /// Closes every connection, the busy ones too (their legs fail at once).
    void abort();

private:
    struct Pool {
        std::vector<std::unique_ptr<UpstreamConnection>> idle;
        std::set<UpstreamConnection*> busy;  // observers only; the legs own them
        // Legs waiting for one of `busy` to be released: observers of timers their coroutines own (each
        // unlists itself before its timer goes); all are woken by a release, and the ones too late wait again.
        std::set<asio::steady_timer*> waiting;
    };
    std::unique_ptr<UpstreamConnection> try_acquire(std::size_t proxy);
    asio::any_io_executor strand_;
    const std::vector<ResolvedProxy>& proxies_;
    std::size_t max_per_proxy_;
    std::size_t buffer_limit_;
    std::vector<Pool> pools_;
    bool aborted_ = false;
};

}  // namespace spe
