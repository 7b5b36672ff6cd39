#include "fanout/proxy_connections.hpp"

#include "core/scope_exit.hpp"

namespace spe {

ProxyConnections::ProxyConnections(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies,
                                   std::size_t max_per_proxy, std::size_t buffer_limit)
    : strand_(std::move(strand)),
      proxies_(proxies),
      max_per_proxy_(max_per_proxy),
      buffer_limit_(buffer_limit),
      pools_(proxies.size()) {}

awaitable<std::unique_ptr<UpstreamConnection>> ProxyConnections::acquire(std::size_t proxy,
                                                                         Clock::time_point deadline) {
    for (;;) {
        if (aborted_) co_return nullptr;
        if (auto conn = try_acquire(proxy)) co_return conn;
        if (Clock::now() >= deadline) co_return nullptr;
        asio::steady_timer wake(strand_);
        wake.expires_at(deadline);
        auto& waiting = pools_.at(proxy).waiting;
        waiting.insert(&wake);
        const ScopeExit unlist([&] { waiting.erase(&wake); });  // the observer goes before the timer does
        error_code ec;
        co_await wake.async_wait(with_ec(ec));
    }
}

std::unique_ptr<UpstreamConnection> ProxyConnections::try_acquire(std::size_t proxy) {
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
    for (auto* wake : pool.waiting)
        wake->cancel();
}

void ProxyConnections::abort() {
    aborted_ = true;
    for (auto& pool : pools_) {
        pool.idle.clear();
        for (auto* conn : pool.busy)
            conn->close();
        for (auto* wake : pool.waiting)
            wake->cancel();
    }
}

}  // namespace spe
