#include "fanout/proxy_turn_queue.hpp"

#include "core/scope_exit.hpp"

namespace spe {

ProxyTurnQueue::ProxyTurnQueue(asio::any_io_executor strand, std::size_t proxies)
    : strand_(std::move(strand)), turns_(proxies), waiting_(proxies) {}

awaitable<ProxyTurnQueue::Wait> ProxyTurnQueue::await_turn(std::size_t proxy, std::uint64_t seq,
                                                           Clock::time_point deadline) {
    if (aborted_) co_return Wait::aborted;
    if (turns_.is_turn(proxy, seq)) co_return Wait::turn;
    if (turns_.is_set_aside(proxy, seq)) co_return Wait::set_aside;
    asio::steady_timer timer(strand_);
    timer.expires_at(deadline);
    auto& waiting = waiting_.at(proxy);
    waiting[seq] = &timer;
    const ScopeExit unlist([&] { waiting.erase(seq); });  // the observer goes before the timer does
    for (;;) {
        error_code ec;
        co_await timer.async_wait(with_ec(ec));
        if (aborted_) co_return Wait::aborted;
        if (turns_.is_turn(proxy, seq)) co_return Wait::turn;
        if (turns_.is_set_aside(proxy, seq)) co_return Wait::set_aside;
        if (!ec) break;
    }
    // The deadline: the legs ahead go on as they are, this one goes now. Any of them still waiting for
    // its turn (its fan-out came to this proxy later) is woken to go too.
    for (const auto aside : turns_.set_aside_before(proxy, seq))
        wake(proxy, aside);
    co_return Wait::gave_up;
}

void ProxyTurnQueue::wake(std::size_t proxy, std::uint64_t seq) {
    const auto& waiting = waiting_.at(proxy);
    if (auto it = waiting.find(seq); it != waiting.end()) it->second->cancel();
}

void ProxyTurnQueue::pass(std::size_t proxy, std::uint64_t seq) {
    if (const auto now = turns_.pass(proxy, seq)) wake(proxy, *now);
}

void ProxyTurnQueue::pass_all(std::uint64_t seq) {
    for (std::size_t proxy = 0; proxy < waiting_.size(); ++proxy)
        pass(proxy, seq);
}

void ProxyTurnQueue::leave(std::uint64_t seq) {
    pass_all(seq);
    tickets_.erase(seq);
}

std::vector<OrderTicket> ProxyTurnQueue::overtaken(std::size_t proxy, std::uint64_t seq) const {
    std::vector<OrderTicket> out;
    for (const auto aside : turns_.set_aside_until(proxy, seq)) {
        const auto it = tickets_.find(aside);
        // A fan-out gone without passing cannot be (its destructor passes): unknown, it is taken as unsafe.
        out.push_back(it != tickets_.end() ? it->second : OrderTicket{0, 0, true});
    }
    return out;
}

void ProxyTurnQueue::abort() {
    aborted_ = true;
    for (auto& waiting : waiting_)
        for (auto& [seq, wake] : waiting)
            wake->cancel();
}

}  // namespace spe
