// The connections one client connection holds to each proxy under test. They
// mirror the client's persistence: kept alive while the client connection
// lives, at most one outstanding request each (a busy one means a new one,
// as in ROPE), closed when the client leaves. Used on their own executor (the
// fan-out's); client_closed() and abort() may be called from anywhere.
#pragma once

#include "server_context.hpp"
#include "upstream_connection.hpp"

#include <atomic>
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

    /// The client connection is gone: close idle connections and every one released from now on.
    void client_closed();
    const asio::any_io_executor& executor() const { return strand_; }

    /// Fan-outs of this connection handed to the executor whose legs have not
    /// started yet: how far the fan-out lags behind the client (any thread).
    void fanout_handed_over() { ++fanouts_not_started_; }
    void fanout_started() { --fanouts_not_started_; }
    std::size_t fanouts_not_started() const { return fanouts_not_started_.load(); }
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
    bool client_closed_ = false;
    std::atomic<std::size_t> fanouts_not_started_{0};
};

}  // namespace spe
