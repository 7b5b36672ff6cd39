#include "session/proxy_pools.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace spe {

ProxyPools::ProxyPools(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies,
                       std::size_t max_per_proxy, std::size_t buffer_limit)
    : strand_(std::move(strand)),
      proxies_(proxies),
      max_per_proxy_(max_per_proxy),
      buffer_limit_(buffer_limit),
      pools_(proxies.size()),
      turns_(proxies.size()),
      waiting_(proxies.size()) {}

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
    if (!conn->is_reusable() || aborted_) return;
    // Kept after the client has gone too while its fan-outs still to come at this proxy (SPE's backlog, legs
    // waiting for their turn) need it, as the client's requests came on one connection; the last of them (only
    // this leg's turn left) closes it, as the client closed its own.
    if (client_gone_ && turns_.ahead(proxy, issued_.load()) <= 1) return;
    pool.idle.push_back(std::move(conn));
}

void ProxyPools::client_closed() {
    asio::post(strand_, [self = shared_from_this()] {
        self->client_gone_ = true;
        // A proxy done with every fan-out of the client sees its connection close now; one that still has
        // legs to come keeps it for them (release closes it after the last).
        const auto issued = self->issued_.load();
        for (std::size_t proxy = 0; proxy < self->pools_.size(); ++proxy)
            if (self->turns_.ahead(proxy, issued) == 0) self->pools_[proxy].idle.clear();
    });
}

awaitable<ProxyPools::TurnWait> ProxyPools::await_turn(std::size_t proxy, std::uint64_t seq,
                                                       Clock::duration per_fanout) {
    if (aborted_) co_return TurnWait::aborted;
    if (turns_.is_turn(proxy, seq)) co_return TurnWait::turn;
    asio::steady_timer wake(strand_);
    wake.expires_after(per_fanout);
    auto& waiting = waiting_.at(proxy);
    waiting[seq] = &wake;
    struct Unlist {  // however the wait ends, the observer goes before the timer does
        std::map<std::uint64_t, asio::steady_timer*>& waiting;
        std::uint64_t seq;
        ~Unlist() { waiting.erase(seq); }
    } unlist{waiting, seq};
    for (;;) {
        error_code ec;
        co_await wake.async_wait(with_ec(ec));
        if (aborted_) co_return TurnWait::aborted;
        if (turns_.is_turn(proxy, seq)) co_return TurnWait::turn;
        if (!ec) co_return TurnWait::timed_out;
    }
}

void ProxyPools::pass_turn(std::size_t proxy, std::uint64_t seq) {
    const auto now = turns_.pass(proxy, seq);
    if (!now) return;
    const auto& waiting = waiting_.at(proxy);
    if (auto it = waiting.find(*now); it != waiting.end()) it->second->cancel();
}

void ProxyPools::pass_all(std::uint64_t seq) {
    for (std::size_t proxy = 0; proxy < pools_.size(); ++proxy)
        pass_turn(proxy, seq);
}

void ProxyPools::abort() {
    asio::post(strand_, [self = shared_from_this()] {
        self->aborted_ = true;
        for (auto& waiting : self->waiting_)
            for (auto& [seq, wake] : waiting)
                wake->cancel();
        for (auto& pool : self->pools_) {
            pool.idle.clear();
            for (auto* conn : pool.busy)
                conn->close();
        }
    });
}

}  // namespace spe
