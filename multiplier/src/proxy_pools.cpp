#include "proxy_pools.hpp"

#include <boost/asio/post.hpp>

namespace spe {

ProxyPools::ProxyPools(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies,
                       std::size_t max_per_proxy, std::size_t buffer_limit)
    : strand_(std::move(strand)),
      proxies_(proxies),
      max_per_proxy_(max_per_proxy),
      buffer_limit_(buffer_limit),
      pools_(proxies.size()) {}

std::unique_ptr<UpstreamConnection> ProxyPools::acquire(std::size_t proxy) {
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

void ProxyPools::release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn) {
    auto& pool = pools_.at(proxy);
    pool.busy.erase(conn.get());
    if (conn->is_reusable() && !client_closed_) pool.idle.push_back(std::move(conn));
}

void ProxyPools::client_closed() {
    asio::post(strand_, [self = shared_from_this()] {
        self->client_closed_ = true;
        for (auto& pool : self->pools_)
            pool.idle.clear();
    });
}

void ProxyPools::abort() {
    asio::post(strand_, [self = shared_from_this()] {
        for (auto& pool : self->pools_) {
            pool.idle.clear();
            for (auto* conn : pool.busy)
                conn->close();
        }
    });
}

}  // namespace spe
