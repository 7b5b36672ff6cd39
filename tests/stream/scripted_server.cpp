#include "scripted_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

namespace spe::test {

ScriptedServer::ScriptedServer(asio::io_context& ioc, std::vector<std::vector<Step>> scripts)
    : ioc_(ioc), acceptor_(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), scripts_(std::move(scripts)) {
    asio::co_spawn(ioc_, accept_loop(), asio::detached);
}

void ScriptedServer::stop() {
    error_code ignored;
    acceptor_.close(ignored);
    for (auto& s : hung_)
        s->close(ignored);
}

awaitable<void> ScriptedServer::accept_loop() {
    error_code ec;
    while (acceptor_.is_open()) {
        auto socket = co_await acceptor_.async_accept(with_ec(ec));
        if (ec) co_return;
        ++accepted_;
        asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
    }
}

awaitable<void> ScriptedServer::serve(tcp::socket socket) {
    auto sock = std::make_shared<tcp::socket>(std::move(socket));
    std::string in;
    error_code ec;
    for (;;) {
        // Requests in these tests have no body: the header's end is the request's end.
        auto n = co_await asio::async_read_until(*sock, asio::dynamic_buffer(in), "\r\n\r\n", with_ec(ec));
        if (ec || served_ >= scripts_.size()) co_return;
        in.erase(0, n);
        for (const auto& step : scripts_[served_++]) {
            switch (step.kind) {
                case Step::send: {
                    const std::size_t piece = step.piece ? step.piece : step.bytes.size();
                    for (std::size_t off = 0; off < step.bytes.size() && !ec; off += piece)
                        co_await asio::async_write(
                            *sock, asio::buffer(step.bytes.data() + off, std::min(piece, step.bytes.size() - off)),
                            with_ec(ec));
                    break;
                }
                case Step::pause: {
                    asio::steady_timer t(ioc_, step.delay);
                    co_await t.async_wait(with_ec(ec));
                    break;
                }
                case Step::close:
                    sock->shutdown(tcp::socket::shutdown_both, ec);
                    sock->close(ec);
                    co_return;
                case Step::reset:
                    sock->set_option(asio::socket_base::linger(true, 0), ec);
                    sock->close(ec);
                    co_return;
                case Step::hang:
                    hung_.push_back(sock);
                    co_return;
            }
            if (ec) co_return;
        }
    }
}

}  // namespace spe::test
