#include "fanout/proxy_turn_queue.hpp"

namespace spe {

ProxyTurnQueue::ProxyTurnQueue(asio::any_io_executor strand, std::size_t proxies)
    : strand_(std::move(strand)), turns_(proxies), waiting_(proxies) {}

awaitable<ProxyTurnQueue::Wait> ProxyTurnQueue::await_turn(std::size_t proxy, std::uint64_t seq,
                                                           Clock::duration per_fanout) {
    if (aborted_) co_return Wait::aborted;
    if (turns_.is_turn(proxy, seq)) co_return Wait::turn;
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
        if (aborted_) co_return Wait::aborted;
        if (turns_.is_turn(proxy, seq)) co_return Wait::turn;
        if (!ec) co_return Wait::timed_out;
    }
}

void ProxyTurnQueue::pass(std::size_t proxy, std::uint64_t seq) {
    const auto now = turns_.pass(proxy, seq);
    if (!now) return;
    const auto& waiting = waiting_.at(proxy);
    if (auto it = waiting.find(*now); it != waiting.end()) it->second->cancel();
}

void ProxyTurnQueue::pass_all(std::uint64_t seq) {
    for (std::size_t proxy = 0; proxy < waiting_.size(); ++proxy)
        pass(proxy, seq);
}

void ProxyTurnQueue::abort() {
    aborted_ = true;
    for (auto& waiting : waiting_)
        for (auto& [seq, wake] : waiting)
            wake->cancel();
}

}  // namespace spe
