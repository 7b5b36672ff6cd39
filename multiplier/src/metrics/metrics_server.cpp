#include "metrics/metrics_server.hpp"

#include "core/coroutine_exception.hpp"
#include "io/accept_loop.hpp"
#include "io/timed_stream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace spe {
namespace {

/// The exposition format's media type (text format 0.0.4).
constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

http::response<http::string_body> reply(http::status status, std::string body, std::string_view type, bool keep_alive) {
    http::response<http::string_body> res{status, 11};
    res.set(http::field::content_type, type);
    res.set(http::field::cache_control, "no-store");
    if (status == http::status::method_not_allowed) res.set(http::field::allow, "GET");
    res.body() = std::move(body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

std::string_view path_of(std::string_view target) {
    return target.substr(0, target.find('?'));
}

}  // namespace

MetricsServer::MetricsServer(const tcp::endpoint& at, AllowList allow, std::function<std::string()> page,
                             MetricsLimits limits)
    : acceptor_(ioc_), allow_(std::move(allow)), page_(std::move(page)), limits_(limits) {
    listen_on(acceptor_, at);
    asio::co_spawn(
        ioc_,
        accept_until_closed(
            acceptor_, "metrics listener: ", [this] { return acceptor_.get_executor(); },
            [this](tcp::socket socket) { admit(std::move(socket)); }),
        report_exception([](const char* what) { spdlog::critical("the metrics listener stopped: {}", what); }));
    thread_ = std::thread([this] { ioc_.run(); });
}

MetricsServer::~MetricsServer() {
    ioc_.stop();  // the accept loop and open scrapes end with the io_context
    if (thread_.joinable()) thread_.join();
}

void MetricsServer::admit(tcp::socket socket) {
    error_code ec;
    auto peer = socket.remote_endpoint(ec);
    if (ec || !allow_.allows(peer.address())) {
        spdlog::info("metrics listener: closed a connection from {} (not in --metrics-allow)",
                     ec ? std::string("?") : peer.address().to_string());
        return;  // the socket closes as it goes
    }
    if (connections_ >= limits_.max_connections) return;
    asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
}

awaitable<void> MetricsServer::serve(tcp::socket socket) {
    ++connections_;
    TimedStream stream(std::move(socket));
    beast::flat_buffer buffer(limits_.max_header_bytes + 1024);
    try {
        while (co_await serve_one(stream, buffer)) {
        }
    } catch (const std::exception& e) {
        spdlog::warn("metrics listener: connection ended by an internal error: {}", e.what());
    }
    stream.close();
    --connections_;
}

awaitable<bool> MetricsServer::serve_one(TimedStream& stream, beast::flat_buffer& buffer) {
    http::request_parser<http::empty_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    error_code ec;
    stream.expires_after(limits_.deadline);
    co_await http::async_read(stream, buffer, parser, with_ec(ec));
    if (ec) co_return false;  // closed, too slow, too large, not HTTP, or a body: nothing to answer
    const auto& req = parser.get();
    const bool keep_alive = req.keep_alive();
    auto res = req.method() != http::verb::get
                   ? reply(http::status::method_not_allowed, "only GET\n", "text/plain", keep_alive)
               : path_of(req.target()) != "/metrics"
                   ? reply(http::status::not_found, "only /metrics\n", "text/plain", keep_alive)
                   : reply(http::status::ok, page_(), kContentType, keep_alive);
    stream.expires_after(limits_.deadline);
    co_await http::async_write(stream, res, with_ec(ec));
    co_return !ec && keep_alive;
}

}  // namespace spe
