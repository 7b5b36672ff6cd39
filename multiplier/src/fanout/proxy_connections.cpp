#include "fanout/proxy_connections.hpp"

namespace spe {

ProxyConnections::ProxyConnections(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies,
                                   std::size_t max_per_proxy, std::size_t buffer_limit)
    : strand_(std::move(strand)),
      proxies_(proxies),
      max_per_proxy_(max_per_proxy),
      buffer_limit_(buffer_limit),
      pools_(proxies.size()) {}

std::unique_ptr<UpstreamConnection> ProxyConnections::acquire(std::size_t proxy) {
    auto& pool = pools_.at(proxy);
    std::unique_ptr<UpstreamConnection> conn;
    if (!pool.idle.empty()) {
        conn = std::move(pool.idle.back());
        pool.idle.pop_back();
    } else if (pool.busy.size() < max_per_proxy_) {
        conn = std::make_unique<UpstreamConnection>(strand_, proxies_[proxy].endpoints, buffer_limit_);
    } else {
        return nullptr;
    }
    pool.busy.insert(conn.get());
    return conn;
}

void ProxyConnections::release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn, bool keep) {
    auto& pool = pools_.at(proxy);
    pool.busy.erase(conn.get());
    if (keep && conn->is_reusable()) pool.idle.push_back(std::move(conn));
}

void ProxyConnections::abort() {
    for (auto& pool : pools_) {
        pool.idle.clear();
        for (auto* conn : pool.busy)
            conn->close();
    }
}

}  // namespace spe
