// Each proxy gets a client connection's requests one at a time, in the
// client's order, as long as --order-wait allows: the turn logic (ProxyTurns)
// and the waiting on it (ProxyTurnQueue).
#include "fanout/fanout.hpp"
#include "fanout/fanout_backlog.hpp"
#include "fanout/proxy_turn_queue.hpp"
#include "fanout/proxy_turns.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using spe::ProxyTurnQueue;
using spe::ProxyTurns;
using namespace std::chrono_literals;

TEST_CASE("a proxy's turn moves in order, one fan-out at a time") {
    ProxyTurns t(2);
    CHECK(t.is_turn(0, 0));
    CHECK_FALSE(t.is_turn(0, 1));
    CHECK(t.ahead(0, 3) == 3);
    CHECK(t.pass(0, 0) == 1u);
    CHECK(t.is_turn(0, 1));
    CHECK(t.is_turn(1, 0));  // each proxy has its own turn
    CHECK(t.ahead(1, 5) == 5);
    CHECK(t.pass(1, 0) == 1u);
    CHECK(t.ahead(1, 5) == 4);
}

TEST_CASE("a fan-out done before its turn is passed over when the turn reaches it") {
    ProxyTurns t(1);
    CHECK_FALSE(t.pass(0, 2));  // fan-out 2 sent nothing (no reference): the turn is still 0's
    CHECK_FALSE(t.pass(0, 1));
    CHECK(t.is_turn(0, 0));
    CHECK(t.ahead(0, 3) == 1);  // only 0 holds 3 up: 1 and 2 are done
    CHECK(t.pass(0, 0) == 3u);  // 0 ends: 1 and 2 are skipped
    CHECK(t.is_turn(0, 3));
}

TEST_CASE("passing twice, or a fan-out already passed, changes nothing") {
    ProxyTurns t(1);
    CHECK(t.pass(0, 0) == 1u);
    CHECK_FALSE(t.pass(0, 0));  // e.g. the leg passed it and then the fan-out's destructor
    CHECK(t.is_turn(0, 1));
    CHECK_FALSE(t.pass(0, 4));
    CHECK_FALSE(t.pass(0, 4));
    CHECK(t.pass(0, 1) == 2u);
    CHECK(t.pass(0, 2) == 3u);
    CHECK(t.pass(0, 3) == 5u);
}

namespace {

struct Bed {
    boost::asio::io_context io;
    spe::FanoutBacklog backlog;
    ProxyTurnQueue turns{io.get_executor(), 2};
    std::vector<std::string> sent;  // "proxy:fan-out" in the order the legs got their turn
    std::vector<ProxyTurnQueue::Wait> outcomes;
    std::vector<std::size_t> overtook;  // per leg sent: how many earlier fan-outs it overtook

    /// A leg: waits for its turn, "sends", holds the proxy for `busy` (as a slow proxy's reply), passes on.
    /// `after`: when the leg is handed over (its request came), from now.
    void leg(std::size_t proxy, std::uint64_t seq, std::chrono::milliseconds busy, spe::Clock::duration bound = 10s,
             std::chrono::milliseconds after = 0ms) {
        boost::asio::co_spawn(
            io,
            [this, proxy, seq, busy, bound, after]() -> spe::awaitable<void> {
                if (after > 0ms) {
                    boost::asio::steady_timer due(io, after);
                    co_await due.async_wait(boost::asio::use_awaitable);
                }
                const auto turn = co_await turns.await_turn(proxy, seq, spe::Clock::now() + bound);
                outcomes.push_back(turn);
                if (turn != ProxyTurnQueue::Wait::aborted) {
                    sent.push_back(std::to_string(proxy) + ":" + std::to_string(seq));
                    overtook.push_back(turns.overtaken(proxy, seq).size());
                }
                boost::asio::steady_timer reply(io, busy);
                spe::error_code ec;
                co_await reply.async_wait(spe::with_ec(ec));
                turns.pass(proxy, seq);
            },
            boost::asio::detached);
    }
};

}  // namespace

TEST_CASE("legs started out of order reach each proxy in the client's order, woken as the one before ends") {
    Bed bed;
    for (std::uint64_t seq = 0; seq < 3; ++seq)
        CHECK(bed.backlog.next_sequence() == seq);
    // Proxy 0 is slow on the first request; the later legs are spawned first, as a busy executor might run them.
    bed.leg(0, 2, 1ms);
    bed.leg(1, 2, 1ms);
    bed.leg(0, 1, 1ms);
    bed.leg(1, 1, 1ms);
    bed.leg(0, 0, 50ms);
    bed.leg(1, 0, 1ms);
    CHECK(bed.turns.ahead(0, 3) == 3);
    const auto start = spe::Clock::now();
    bed.io.run_for(5s);
    CHECK(spe::Clock::now() - start < 2s);  // woken, not timed out
    const std::vector<std::string> proxy0 = [&] {
        std::vector<std::string> v;
        for (auto& s : bed.sent)
            if (s[0] == '0') v.push_back(s);
        return v;
    }();
    CHECK(proxy0 == std::vector<std::string>{"0:0", "0:1", "0:2"});
    // Proxy 1 is not held up by proxy 0: its three legs went before proxy 0's second.
    const auto index = [&](const std::string& s) {
        return std::find(bed.sent.begin(), bed.sent.end(), s) - bed.sent.begin();
    };
    CHECK(index("1:2") < index("0:1"));
    CHECK(bed.turns.ahead(0, 3) == 0);
    CHECK(bed.turns.ahead(1, 3) == 0);
}

TEST_CASE("a fan-out that sends nothing still passes its turn on") {
    Bed bed;
    for (int i = 0; i < 3; ++i)
        bed.backlog.next_sequence();
    bed.leg(0, 2, 1ms);
    bed.leg(0, 0, 20ms);
    bed.turns.pass_all(1);              // a reference shortfall: fan-out 1 has no legs
    CHECK(bed.turns.ahead(1, 3) == 2);  // 0 and 2; 1 is done everywhere
    bed.io.run_for(5s);
    CHECK(bed.sent == std::vector<std::string>{"0:0", "0:2"});
    CHECK(bed.turns.ahead(0, 3) == 0);
    CHECK(bed.turns.ahead(1, 3) == 2);  // proxy 1 still waits for fan-out 0 (its turn never came here)
    bed.turns.pass_all(0);
    CHECK(bed.turns.ahead(1, 3) == 1);  // 0 and 1 done everywhere, 2 not at proxy 1
    bed.turns.pass_all(2);
    CHECK(bed.turns.ahead(1, 3) == 0);
}

TEST_CASE("the wait for a turn has a deadline: then the leg ahead is set aside and the leg goes") {
    Bed bed;
    bed.backlog.next_sequence();
    bed.backlog.next_sequence();
    // Fan-out 0 never passes proxy 0 (it hangs): fan-out 1's leg stops waiting after 20 ms and goes.
    const auto start = spe::Clock::now();
    bed.leg(0, 1, 1ms, 20ms);
    bed.io.run_for(5s);
    const auto waited = spe::Clock::now() - start;
    REQUIRE(bed.outcomes.size() == 1);
    CHECK(bed.outcomes[0] == ProxyTurnQueue::Wait::gave_up);
    CHECK(bed.sent == std::vector<std::string>{"0:1"});
    CHECK(bed.overtook == std::vector<std::size_t>{1});
    CHECK(waited >= 20ms);
    CHECK(waited < 2s);
    CHECK(bed.turns.ahead(0, 2) == 0);  // the turn went on past both
}

TEST_CASE("one hung leg costs only itself: the legs after it go in order once one of them gave up") {
    Bed bed;
    constexpr std::uint64_t kLegs = 20;
    for (std::uint64_t seq = 0; seq <= kLegs; ++seq)
        bed.backlog.next_sequence();
    bed.turns.enter(0, {100, 7, false});
    bed.leg(0, 0, 3s);  // hangs, as a proxy after a 103 until --timeout
    // The client's next requests come every 100 ms, each leg waiting 200 ms at most; the proxy answers them at
    // once. The spacing is wider than a loaded machine's stall (ASan, two cores shared): two deadlines that fell
    // within one stall would both fire, and a second leg would give up.
    for (std::uint64_t seq = 1; seq <= kLegs; ++seq)
        bed.leg(0, seq, 0ms, 200ms, std::chrono::milliseconds(100 * seq));
    bed.io.run_for(2500ms);
    // The first leg behind the hung one waited its 200 ms; the rest followed it in order, none waiting out
    // its own deadline.
    REQUIRE(bed.sent.size() == kLegs + 1);
    CHECK(bed.outcomes[1] == ProxyTurnQueue::Wait::gave_up);
    CHECK(std::count(bed.outcomes.begin(), bed.outcomes.end(), ProxyTurnQueue::Wait::gave_up) == 1);
    CHECK(std::count(bed.outcomes.begin(), bed.outcomes.end(), ProxyTurnQueue::Wait::turn) == kLegs);
    // Each sent while fan-out 0 was still out: each overtook it, and its ticket names it.
    CHECK(std::all_of(bed.overtook.begin() + 1, bed.overtook.end(), [](auto n) { return n == 1; }));
    const auto overtaken = bed.turns.overtaken(0, kLegs + 1);
    REQUIRE(overtaken.size() == 1);
    CHECK(overtaken[0].id == 100);
    bed.io.restart();
    bed.io.run_for(3s);  // the hung leg ends: nothing is overtaken any more
    CHECK(bed.turns.overtaken(0, kLegs + 1).empty());
}

TEST_CASE("setting aside moves the turn past the legs still out, which end in any order") {
    ProxyTurns t(1);
    CHECK_FALSE(t.pass(0, 2));  // 2 is done early
    CHECK(t.set_aside_before(0, 4) == std::vector<std::uint64_t>{0, 1, 3});
    CHECK(t.is_turn(0, 4));
    CHECK(t.is_set_aside(0, 0));
    CHECK_FALSE(t.is_set_aside(0, 2));
    CHECK(t.set_aside_until(0, 5) == std::vector<std::uint64_t>{0, 1, 3});
    CHECK(t.set_aside_until(0, 2) == std::vector<std::uint64_t>{0, 1});
    CHECK_FALSE(t.pass(0, 1));  // a set-aside leg ends: the turn stays where it is
    CHECK(t.set_aside_until(0, 5) == std::vector<std::uint64_t>{0, 3});
    CHECK(t.is_turn(0, 4));
    CHECK(t.ahead(0, 7) == 3);
    CHECK(t.pass(0, 4) == 5u);
}

TEST_CASE("a leg whose turn was set aside while it waited goes at once, out of order") {
    Bed bed;
    for (int i = 0; i < 3; ++i)
        bed.backlog.next_sequence();
    bed.leg(0, 0, 3s);         // hangs
    bed.leg(0, 1, 1ms, 10s);   // waits long
    bed.leg(0, 2, 1ms, 50ms);  // gives up first: sets 0 and the waiting 1 aside
    const auto start = spe::Clock::now();
    bed.io.run_for(300ms);
    CHECK(spe::Clock::now() - start < 1s);
    REQUIRE(bed.outcomes.size() == 3);
    CHECK(bed.outcomes[1] == ProxyTurnQueue::Wait::gave_up);
    CHECK(bed.outcomes[2] == ProxyTurnQueue::Wait::set_aside);
    CHECK(bed.sent == std::vector<std::string>{"0:0", "0:2", "0:1"});
}

TEST_CASE("abort wakes the legs waiting for their turn") {
    Bed bed;
    bed.backlog.next_sequence();
    bed.backlog.next_sequence();
    bed.leg(0, 1, 1ms);
    boost::asio::post(bed.io, [&] { bed.turns.abort(); });
    const auto start = spe::Clock::now();
    bed.io.run_for(5s);
    REQUIRE(bed.outcomes.size() == 1);
    CHECK(bed.outcomes[0] == ProxyTurnQueue::Wait::aborted);
    CHECK(spe::Clock::now() - start < 2s);
}

TEST_CASE(
    "the longest hold of a client: --turn-timeout, else --timeout and a second, once per proxy with --legs serial") {
    spe::Config c;
    c.timeout = 2s;
    CHECK(spe::client_hold_bound(c, 3) == 3s);
    c.legs = spe::LegOrder::serial;
    CHECK(spe::client_hold_bound(c, 3) == 9s);
    CHECK(spe::client_hold_bound(c, 0) == 3s);
    c.turn_timeout = 500ms;  // as given, whatever the legs
    CHECK(spe::client_hold_bound(c, 3) == 500ms);
}
