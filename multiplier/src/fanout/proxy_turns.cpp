#include "fanout/proxy_turns.hpp"

#include <algorithm>

namespace spe {

ProxyTurns::ProxyTurns(std::size_t proxies) : turns_(proxies) {}

bool ProxyTurns::is_turn(std::size_t proxy, std::uint64_t seq) const {
    return turns_.at(proxy).current == seq;
}

std::uint64_t ProxyTurns::ahead(std::size_t proxy, std::uint64_t seq) const {
    const auto& turn = turns_.at(proxy);
    if (seq <= turn.current) return 0;
    // The fan-outs between the turn and `seq` that are already done do not hold `seq` up.
    const auto done = std::distance(turn.done_out_of_turn.begin(), turn.done_out_of_turn.lower_bound(seq));
    return seq - turn.current - static_cast<std::uint64_t>(done);
}

std::optional<std::uint64_t> ProxyTurns::pass(std::size_t proxy, std::uint64_t seq) {
    auto& turn = turns_.at(proxy);
    if (seq < turn.current) return std::nullopt;
    if (seq > turn.current) {
        turn.done_out_of_turn.insert(seq);
        return std::nullopt;
    }
    ++turn.current;
    while (!turn.done_out_of_turn.empty() && *turn.done_out_of_turn.begin() == turn.current) {
        turn.done_out_of_turn.erase(turn.done_out_of_turn.begin());
        ++turn.current;
    }
    return turn.current;
}

}  // namespace spe
