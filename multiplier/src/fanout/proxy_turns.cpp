#include "fanout/proxy_turns.hpp"

#include <algorithm>

namespace spe {

ProxyTurns::ProxyTurns(std::size_t proxies) : turns_(proxies) {}

bool ProxyTurns::is_turn(std::size_t proxy, std::uint64_t seq) const {
    return turns_.at(proxy).current == seq;
}

bool ProxyTurns::is_set_aside(std::size_t proxy, std::uint64_t seq) const {
    return turns_.at(proxy).set_aside.contains(seq);
}

std::uint64_t ProxyTurns::ahead(std::size_t proxy, std::uint64_t seq) const {
    const auto& turn = turns_.at(proxy);
    if (seq <= turn.current) return 0;
    // The fan-outs between the turn and `seq` that are already done do not hold `seq` up.
    const auto done = std::distance(turn.done_out_of_turn.begin(), turn.done_out_of_turn.lower_bound(seq));
    return seq - turn.current - static_cast<std::uint64_t>(done);
}

void ProxyTurns::skip_done(Turn& turn) {
    while (!turn.done_out_of_turn.empty() && *turn.done_out_of_turn.begin() == turn.current) {
        turn.done_out_of_turn.erase(turn.done_out_of_turn.begin());
        ++turn.current;
    }
}

std::optional<std::uint64_t> ProxyTurns::pass(std::size_t proxy, std::uint64_t seq) {
    auto& turn = turns_.at(proxy);
    if (seq < turn.current) {
        turn.set_aside.erase(seq);  // a leg the turn went past has ended now
        return std::nullopt;
    }
    if (seq > turn.current) {
        turn.done_out_of_turn.insert(seq);
        return std::nullopt;
    }
    ++turn.current;
    skip_done(turn);
    return turn.current;
}

std::vector<std::uint64_t> ProxyTurns::set_aside_before(std::size_t proxy, std::uint64_t seq) {
    auto& turn = turns_.at(proxy);
    std::vector<std::uint64_t> aside;
    for (; turn.current < seq; ++turn.current) {
        if (turn.done_out_of_turn.erase(turn.current)) continue;
        turn.set_aside.insert(turn.current);
        aside.push_back(turn.current);
    }
    return aside;
}

std::vector<std::uint64_t> ProxyTurns::set_aside_until(std::size_t proxy, std::uint64_t seq) const {
    const auto& aside = turns_.at(proxy).set_aside;
    return {aside.begin(), aside.lower_bound(seq)};
}

}  // namespace spe
