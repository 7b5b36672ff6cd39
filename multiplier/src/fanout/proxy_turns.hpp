// Whose turn it is at each proxy among one client connection's fan-outs.
// The fan-outs are numbered in the client's order (0, 1, 2 ...). A proxy gets
// the leg of fan-out N+1 only once fan-out N is done with it (its leg ended,
// or it sends none), so each proxy sees the client's requests in the order
// the client and the Collector saw them (RFC 9111 4.4: an unsafe request
// invalidates, then the next GET must not overtake it). A fan-out may be done
// before its turn comes (no leg at all, e.g. no reference): the turn then
// passes over it when it arrives.
//
// The order is kept only briefly: a leg that waited --order-wait sets the
// fan-outs ahead of it aside. The turn moves
// past them while their legs are still out (each keeps its connection and its
// own deadline), and the legs after them go on other connections, recorded as
// having overtaken them. Without this one hung leg (a proxy that never ends a
// reply after a 103) held every later request of its client until --timeout,
// and a proxy merely slower than the client lost most of its legs: SPE, not
// the proxy, decided what was measured. Plain data, no I/O: ProxyTurnQueue owns
// one on its strand and does the waking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace spe {

class ProxyTurns {
public:
    explicit ProxyTurns(std::size_t proxies);

    /// Whether fan-out `seq` may send its leg to `proxy` now, in order.
    bool is_turn(std::size_t proxy, std::uint64_t seq) const;
    /// Whether the turn went past fan-out `seq` while it was not done with `proxy` (it was set aside): its
    /// leg may go, out of order, whenever it can.
    bool is_set_aside(std::size_t proxy, std::uint64_t seq) const;
    /// How many earlier fan-outs `proxy` still waits for before `seq`'s turn (0: its turn).
    std::uint64_t ahead(std::size_t proxy, std::uint64_t seq) const;
    /// Fan-out `seq` is done with `proxy`. Passing twice, or a fan-out the turn already
    /// passed, changes nothing. Returns the fan-out whose turn it now is when the turn moved.
    std::optional<std::uint64_t> pass(std::size_t proxy, std::uint64_t seq);
    /// Gives `seq` the turn at `proxy` now: every fan-out before it not yet done is set aside. Returns them.
    std::vector<std::uint64_t> set_aside_before(std::size_t proxy, std::uint64_t seq);
    /// The fan-outs before `seq` set aside at `proxy` and still not done with it: those a leg sent now overtakes.
    std::vector<std::uint64_t> set_aside_until(std::size_t proxy, std::uint64_t seq) const;

private:
    struct Turn {
        std::uint64_t current = 0;                 // the fan-out whose leg this proxy gets next (or has now)
        std::set<std::uint64_t> done_out_of_turn;  // later fan-outs already done with this proxy
        std::set<std::uint64_t> set_aside;         // earlier fan-outs the turn went past before they were done
    };
    /// Moves the turn past the fan-outs already done out of turn.
    static void skip_done(Turn& turn);
    std::vector<Turn> turns_;
};

}  // namespace spe
