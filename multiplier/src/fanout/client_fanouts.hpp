// What one client connection's fan-outs share on the fan-out executor: their
// numbers in the client's order (the backlog meter), each proxy's turn, and
// the connections to each proxy. A proxy gets the connection's requests one at
// a time, in the order the client sent them (RFC 9111 4.4: an unsafe request
// invalidates, then the next GET must not overtake it), on connections that
// live as long as the client's: closed when the client leaves, at once where
// no leg of its is still to come, else after the last one. The client is never
// held back for a proxy (a proxy must not change how fast the client is
// served): a leg waits for the proxy's earlier legs --order-wait at most, then
// goes on another connection (Fanout::send_in_turn). client_closed() and abort()
// may be called from anywhere, the backlog read anywhere; the rest runs on
// executor().
#pragma once

#include "context/server_context.hpp"
#include "fanout/fanout_backlog.hpp"
#include "fanout/proxy_connections.hpp"
#include "fanout/proxy_turn_queue.hpp"

#include <memory>

namespace spe {

class ClientFanouts : public Abortable, public std::enable_shared_from_this<ClientFanouts> {
public:
    ClientFanouts(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies, std::size_t max_per_proxy,
                  std::size_t buffer_limit);

    const asio::any_io_executor& executor() const { return strand_; }
    FanoutBacklog& backlog() { return backlog_; }
    ProxyTurnQueue& turns() { return turns_; }

    /// A connection for a leg to `proxy`, waiting until `deadline` when it has too many outstanding for this
    /// client; nullptr after it.
    awaitable<std::unique_ptr<UpstreamConnection>> acquire(std::size_t proxy, Clock::time_point deadline) {
        return connections_.acquire(proxy, deadline);
    }
    /// The leg is done with `conn`: kept for the next one unless the client has gone and no leg is to come.
    void release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn);
    /// The client connection is gone: close the idle connections of the proxies done with all its
    /// fan-outs. A connection a later leg will still use stays for it, and the last leg closes it.
    void client_closed();
    void abort() override;
    /// abort() has run (on the strand): a leg that got no connection was stopped, not refused one.
    bool aborted() const { return aborted_; }

private:
    asio::any_io_executor strand_;
    FanoutBacklog backlog_;
    ProxyTurnQueue turns_;
    ProxyConnections connections_;
    bool aborted_ = false;
    bool client_gone_ = false;  // client_closed() ran (on the strand)
};

}  // namespace spe
