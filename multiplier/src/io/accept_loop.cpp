#include "io/accept_loop.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace spe {

void listen_on(tcp::acceptor& acceptor, const tcp::endpoint& at) {
    acceptor.open(at.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(at);
    acceptor.listen(asio::socket_base::max_listen_connections);
}

awaitable<void> accept_until_closed(tcp::acceptor& acceptor, std::string_view log_prefix,
                                    std::function<asio::any_io_executor()> executor_for_next,
                                    std::function<void(tcp::socket)> admit) {
    error_code ec;
    while (acceptor.is_open()) {
        auto socket = co_await acceptor.async_accept(executor_for_next(), with_ec(ec));
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) break;
        if (ec) {
            // Out of file descriptors and the like: say so, breathe, go on.
            spdlog::warn("{}accept failed: {}", log_prefix, ec.message());
            asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(100));
            co_await pause.async_wait(with_ec(ec));
            continue;
        }
        admit(std::move(socket));
    }
}

}  // namespace spe
