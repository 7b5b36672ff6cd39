// A client's order across its connections (ClientOrder): a request sent after the client had the whole
// reply to an earlier one reaches each proxy after that proxy is done with the earlier one; requests
// in flight together go in any order.
#include "context/client_order.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>

#include <optional>
#include <thread>

using spe::ClientOrder;
using namespace std::chrono_literals;

namespace {
/// Request `id`, a GET of its own URL.
spe::OrderTicket ticket(std::uint64_t id, bool unsafe = false) {
    return {id, spe::url_key("http://o/" + std::to_string(id)), unsafe};
}

/// Runs one leg's wait on `io`, keeping what it returned.
void wait_in(boost::asio::io_context& io, ClientOrder& order, ClientOrder::PlacePtr place, std::size_t proxy,
             std::chrono::milliseconds bound, std::optional<ClientOrder::Waited>& out) {
    boost::asio::co_spawn(
        io,
        [&order, place, proxy, bound, &out, ex = io.get_executor()]() -> spe::awaitable<void> {
            out = co_await order.await_earlier(place, proxy, spe::Clock::now() + bound, ex);
        },
        boost::asio::detached);
}
}  // namespace

TEST_CASE("a request sent after an earlier reply was whole waits at each proxy for that one") {
    boost::asio::io_context io;
    ClientOrder order(2);
    auto first = order.arrive(ticket(1));
    order.delivered(first);
    auto second = order.arrive(ticket(2));  // e.g. on another connection, after reading reply 1
    std::optional<ClientOrder::Waited> at0, at1;
    wait_in(io, order, second, 0, 5000ms, at0);
    wait_in(io, order, second, 1, 5000ms, at1);
    io.run_for(50ms);
    CHECK_FALSE(at0);  // proxy 0 has not answered request 1 yet
    CHECK_FALSE(at1);
    order.done(first, 1);
    io.restart();
    io.run_for(50ms);
    CHECK_FALSE(at0);
    REQUIRE(at1);  // each proxy on its own
    CHECK(at1->how == ClientOrder::Wait::ready);
    CHECK(at1->ids == std::vector<std::uint64_t>{1});
    order.done(first, 0);
    io.restart();
    io.run_for(50ms);
    REQUIRE(at0);
    CHECK(at0->ids == std::vector<std::uint64_t>{1});
}

TEST_CASE("requests the client had in flight together do not wait for each other") {
    boost::asio::io_context io;
    ClientOrder order(1);
    auto first = order.arrive(ticket(1));
    auto second = order.arrive(ticket(2));  // sent before reply 1 was whole
    order.delivered(first);
    std::optional<ClientOrder::Waited> waited;
    wait_in(io, order, second, 0, 5000ms, waited);
    io.run_for(50ms);
    REQUIRE(waited);
    CHECK(waited->how == ClientOrder::Wait::ready);
    CHECK(waited->ids.empty());
}

TEST_CASE("the wait has a deadline: then the earlier request is set aside and the later one goes") {
    boost::asio::io_context io;
    ClientOrder order(2);
    auto first = order.arrive(ticket(1, true));
    order.delivered(first);
    auto second = order.arrive(ticket(2));
    auto third = order.arrive(ticket(3));  // in flight with 2, after 1
    std::optional<ClientOrder::Waited> waited, also;
    wait_in(io, order, second, 0, 30ms, waited);
    wait_in(io, order, third, 0, 5000ms, also);
    const auto start = spe::Clock::now();
    io.run_for(500ms);
    REQUIRE(waited);
    CHECK(waited->how == ClientOrder::Wait::gave_up);
    CHECK(waited->ids == std::vector<std::uint64_t>{1});
    // Request 3 waited for 1 too: it goes with 2, not after its own deadline.
    REQUIRE(also);
    CHECK(also->how == ClientOrder::Wait::ready);
    CHECK(spe::Clock::now() - start < 2s);
    // Both overtake 1 at proxy 0 while it is still out there, and know it was unsafe.
    const auto overtaken = order.overtaken(second, 0);
    REQUIRE(overtaken.size() == 1);
    CHECK(overtaken[0].id == 1);
    CHECK(overtaken[0].affects(spe::url_key("http://o/2")));
    CHECK(order.overtaken(third, 0).size() == 1);
    CHECK(order.overtaken(second, 1).empty());  // proxy 1 was not given up on
    order.done(first, 0);                       // the hung leg ends at last
    CHECK(order.overtaken(second, 0).empty());
}

TEST_CASE("overtaking a safe request for another URL changes nothing a cache shows; the same URL does") {
    const spe::OrderTicket get{1, spe::url_key("http://o/a"), false};
    CHECK_FALSE(get.affects(spe::url_key("http://o/b")));
    CHECK(get.affects(spe::url_key("http://o/a")));
    const spe::OrderTicket put{2, spe::url_key("http://o/a"), true};
    CHECK(put.affects(spe::url_key("http://o/b")));  // its reply's Location may name any URL
}

TEST_CASE("a wake from another thread reaches a leg that is about to wait") {
    boost::asio::io_context io;
    ClientOrder order(1);
    auto first = order.arrive(ticket(1));
    order.delivered(first);
    auto second = order.arrive(ticket(2));
    std::optional<ClientOrder::Waited> waited;
    wait_in(io, order, second, 0, 10000ms, waited);
    std::thread other([&] { order.done(first, 0); });  // the earlier leg ends on another fan-out thread
    io.run_for(200ms);
    other.join();
    io.restart();
    io.run_for(200ms);
    REQUIRE(waited);
    CHECK(waited->how == ClientOrder::Wait::ready);
}

TEST_CASE("retired requests are forgotten once those before them are; the rest are kept") {
    ClientOrder order(2);
    auto first = order.arrive(ticket(1));
    auto second = order.arrive(ticket(2));
    order.delivered(second);
    order.retire(second);  // ended first: kept until the one before it ends too
    CHECK(order.tracked() == 2);
    order.retire(first);  // never delivered (the client left): retiring is enough
    CHECK(order.tracked() == 0);
    auto third = order.arrive(ticket(3));
    std::optional<ClientOrder::Waited> waited;
    boost::asio::io_context io;
    wait_in(io, order, third, 0, 5000ms, waited);
    io.run_for(50ms);
    REQUIRE(waited);
    CHECK(waited->ids.empty());
}

TEST_CASE("each client address, or address and X-SPE-Client, has one order while a session holds it") {
    spe::ClientOrders orders(1);
    auto a = orders.of("127.0.0.1");
    CHECK(orders.of("127.0.0.1") == a);
    CHECK(orders.of("127.0.0.1/user-2") != a);
    std::weak_ptr<ClientOrder> gone = a;
    a.reset();  // the last session of that client closed: its order goes with it
    CHECK(gone.expired());
    CHECK(orders.of("127.0.0.1"));
}
