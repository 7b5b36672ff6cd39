#include "session/listener.hpp"
#include "core/coroutine_exception.hpp"

#include "core/refusals.hpp"
#include "io/accept_loop.hpp"
#include "session/downstream_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>

namespace spe {
namespace {

/// The executor a new connection runs on. With one I/O thread the io_context
/// already runs every handler one at a time (an implicit strand), and its
/// executor fits inside any_io_executor; a strand does not, so each copy or
/// adaptation of it (over a hundred per client request) was a heap allocation.
asio::any_io_executor connection_executor(asio::io_context& ioc, unsigned threads) {
    if (threads <= 1) return ioc.get_executor();
    return asio::make_strand(ioc);
}

}  // namespace

Listener::Listener(asio::io_context& ioc, std::shared_ptr<ServerContext> ctx)
    : ioc_(ioc), ctx_(std::move(ctx)), strand_(connection_executor(ioc, ctx_->config().threads)), acceptor_(strand_) {
    const auto& listen = ctx_->config().listen;
    listen_on(acceptor_, tcp::endpoint(asio::ip::make_address(listen.host), listen.port));
}

void Listener::start() {
    auto self = shared_from_this();
    asio::co_spawn(strand_,
                   accept_until_closed(
                       acceptor_, "", [this] { return connection_executor(ioc_, ctx_->config().threads); },
                       [self](tcp::socket socket) { self->admit(std::move(socket)); }),
                   report_exception([self](const char* what) { spdlog::critical("the listener stopped: {}", what); }));
}

void Listener::stop() {
    asio::post(strand_, [self = shared_from_this()] {
        error_code ignored;
        self->acceptor_.close(ignored);
        for (auto& w : self->sessions_)
            if (auto s = w.lock()) s->stop_if_idle();
    });
}

void Listener::admit(tcp::socket socket) {
    error_code ec;
    auto peer = socket.remote_endpoint(ec);
    if (ec) return;
    if (!ctx_->config().allow.allows(peer.address())) {
        spdlog::warn("refused client {} (not in --allow)", peer.address().to_string());
        asio::co_spawn(socket.get_executor(), refuse_client(std::move(socket)), asio::detached);
        return;
    }
    auto session = std::make_shared<DownstreamSession>(std::move(socket), ctx_);
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    sessions_.push_back(session);
    session->start();
}

namespace {

/// The whole answer to a client outside the allow-list, made once.
const std::string& not_allowed_reply() {
    static const std::string reply = [] {
        const auto status = status_of(Refusal::client_not_allowed);
        const std::string_view body = "SPE Multiplier: your address is not in the allow-list.\n";
        return fmt::format(
            "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
            std::string_view(http::obsolete_reason(static_cast<http::status>(status))), body.size(), body);
    }();
    return reply;
}

}  // namespace

awaitable<void> Listener::refuse_client(tcp::socket socket) {
    const auto& reply = not_allowed_reply();
    TimedStream stream(std::move(socket));
    stream.expires_after(std::chrono::seconds(5));
    error_code ec;
    co_await asio::async_write(stream, asio::buffer(reply.data(), reply.size()), with_ec(ec));
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

}  // namespace spe
