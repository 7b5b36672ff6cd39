#include "proxy_pools.hpp"

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
      waiting_(proxies.size()),
      turn_(proxies.size()),
      sent_ns_(proxies.size()) {}

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

std::uint64_t ProxyPools::behind(Clock::duration stalled_after) const {
    // issued_ changes only on the client's side (the caller's), and a turn never passes the
    // fan-outs issued, so the difference is never negative.
    const auto issued = issued_.load();
    const auto stalled_before = (Clock::now() - stalled_after).time_since_epoch().count();
    std::uint64_t most = 0;
    for (std::size_t proxy = 0; proxy < turn_.size(); ++proxy) {
        const auto sent = sent_ns_[proxy].load();
        if (sent != 0 && sent < stalled_before) continue;
        const auto turn = turn_[proxy].load();
        most = std::max(most, issued > turn ? issued - turn : 0);
    }
    return most;
}

void ProxyPools::leg_sent(std::size_t proxy) {
    sent_ns_.at(proxy) = Clock::now().time_since_epoch().count();
}

awaitable<ProxyPools::TurnWait> ProxyPools::await_turn(std::size_t proxy, std::uint64_t seq,
                                                       Clock::duration per_fanout) {
    if (aborted_) co_return TurnWait::aborted;
    if (turns_.is_turn(proxy, seq)) co_return TurnWait::turn;
    asio::steady_timer wake(strand_);
    // Every fan-out before `seq` that some proxy is not done with may hold it up (with --legs serial through
    // another proxy's turn, too); each takes at most `per_fanout`.
    wake.expires_after(per_fanout * static_cast<Clock::rep>(seq - turns_.slowest(seq) + 1));
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
    turn_[proxy] = *now;
    sent_ns_[proxy] = 0;
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
