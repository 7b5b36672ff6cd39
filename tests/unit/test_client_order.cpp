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
/// Runs one leg's wait on `io`, keeping what it returned.
void wait_in(boost::asio::io_context& io, ClientOrder& order, ClientOrder::PlacePtr place, std::size_t proxy,
             std::chrono::milliseconds bound, std::optional<ClientOrder::Waited>& out) {
    boost::asio::co_spawn(
        io,
        [&order, place, proxy, bound, &out, ex = io.get_executor()]() -> spe::awaitable<void> {
            out = co_await order.await_earlier(place, proxy, bound, ex);
        },
        boost::asio::detached);
}
}  // namespace

TEST_CASE("a request sent after an earlier reply was whole waits at each proxy for that one") {
    boost::asio::io_context io;
    ClientOrder order(2);
    auto first = order.arrive(1);
    order.delivered(first);
    auto second = order.arrive(2);  // e.g. on another connection, after reading reply 1
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
    auto first = order.arrive(1);
    auto second = order.arrive(2);  // sent before reply 1 was whole
    order.delivered(first);
    std::optional<ClientOrder::Waited> waited;
    wait_in(io, order, second, 0, 5000ms, waited);
    io.run_for(50ms);
    REQUIRE(waited);
    CHECK(waited->how == ClientOrder::Wait::ready);
    CHECK(waited->ids.empty());
}

TEST_CASE("the wait has a deadline: a proxy that never answers the earlier request loses the later one") {
    boost::asio::io_context io;
    ClientOrder order(1);
    auto first = order.arrive(1);
    order.delivered(first);
    auto second = order.arrive(2);
    std::optional<ClientOrder::Waited> waited;
    wait_in(io, order, second, 0, 30ms, waited);
    io.run_for(500ms);
    REQUIRE(waited);
    CHECK(waited->how == ClientOrder::Wait::timed_out);
    CHECK(waited->ids == std::vector<std::uint64_t>{1});
}

TEST_CASE("a wake from another thread reaches a leg that is about to wait") {
    boost::asio::io_context io;
    ClientOrder order(1);
    auto first = order.arrive(1);
    order.delivered(first);
    auto second = order.arrive(2);
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
    auto first = order.arrive(1);
    auto second = order.arrive(2);
    order.delivered(second);
    order.retire(second);  // ended first: kept until the one before it ends too
    CHECK(order.tracked() == 2);
    order.retire(first);  // never delivered (the client left): retiring is enough
    CHECK(order.tracked() == 0);
    auto third = order.arrive(3);
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
