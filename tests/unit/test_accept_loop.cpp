// The accept loop the proxy port, the replay port and the metrics port share (io/accept_loop.hpp).
#include "io/accept_loop.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <vector>

namespace {

using spe::tcp;
namespace asio = spe::asio;

const tcp::endpoint kLoopbackAnyPort{asio::ip::make_address("127.0.0.1"), 0};

/// Runs the loop on `acceptor` until it ends; true when it ended (within five seconds).
bool run_loop(asio::io_context& ioc, tcp::acceptor& acceptor, std::function<asio::any_io_executor()> executor_for_next,
              std::function<void(tcp::socket)> admit) {
    bool ended = false;
    asio::co_spawn(ioc, spe::accept_until_closed(acceptor, "test: ", std::move(executor_for_next), std::move(admit)),
                   [&](std::exception_ptr) { ended = true; });
    ioc.run_for(std::chrono::seconds(5));
    return ended;
}

}  // namespace

TEST_CASE("listen_on binds with SO_REUSEADDR and listens") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc);
    spe::listen_on(acceptor, kLoopbackAnyPort);
    asio::socket_base::reuse_address reuse;
    acceptor.get_option(reuse);
    CHECK(reuse.value());
    CHECK(acceptor.local_endpoint().port() != 0);
    tcp::socket client(ioc);
    client.connect(acceptor.local_endpoint());  // throws unless it listens
}

TEST_CASE("each connection goes to the handler on the executor chosen for it; closing the acceptor ends the loop") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc);
    spe::listen_on(acceptor, kLoopbackAnyPort);
    tcp::socket first(ioc), second(ioc);
    first.connect(acceptor.local_endpoint());
    second.connect(acceptor.local_endpoint());

    std::vector<asio::any_io_executor> chosen;
    std::vector<tcp::socket> admitted;
    const bool ended = run_loop(
        ioc, acceptor,
        [&] {
            chosen.push_back(asio::make_strand(ioc));
            return chosen.back();
        },
        [&](tcp::socket socket) {
            admitted.push_back(std::move(socket));
            if (admitted.size() == 2) asio::post(ioc, [&] { acceptor.close(); });  // aborts the pending accept
        });
    CHECK(ended);
    REQUIRE(admitted.size() == 2);
    CHECK(admitted[0].get_executor() == chosen[0]);
    CHECK(admitted[1].get_executor() == chosen[1]);
    CHECK(admitted[0].remote_endpoint() == first.local_endpoint());
}

TEST_CASE("a cancelled accept ends the loop, the acceptor still open") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc);
    spe::listen_on(acceptor, kLoopbackAnyPort);
    const bool ended = run_loop(
        ioc, acceptor,
        [&] {
            asio::post(ioc, [&] { acceptor.cancel(); });  // runs once the accept has started
            return acceptor.get_executor();
        },
        [](tcp::socket) {});
    CHECK(ended);
    CHECK(acceptor.is_open());
}

TEST_CASE("an accept that fails is retried after a pause, not given up nor spun on") {
    // Out of file descriptors is the failure met in a run; a socket bound but not yet listening fails its
    // accept (EINVAL) as well, without taking from the sanitizers the descriptors they need.
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc);
    acceptor.open(kLoopbackAnyPort.protocol());
    acceptor.bind(kLoopbackAnyPort);
    tcp::socket client(ioc);
    asio::steady_timer listen_later(ioc, std::chrono::milliseconds(350));
    listen_later.async_wait([&](spe::error_code) {
        acceptor.listen();
        client.connect(acceptor.local_endpoint());
    });

    int tries = 0;
    int admitted = 0;
    const auto started = std::chrono::steady_clock::now();
    const bool ended = run_loop(
        ioc, acceptor,
        [&] {
            ++tries;
            return acceptor.get_executor();
        },
        [&](tcp::socket) {
            ++admitted;
            acceptor.close();
        });
    CHECK(ended);
    CHECK(admitted == 1);
    CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(350));
    CHECK(tries >= 3);  // failed until it listened, then accepted
    CHECK(tries <= 6);  // about one try each 100 ms, not a spin
}
