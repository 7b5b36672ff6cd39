#include "replay/replay_server.hpp"
#include "core/ascii.hpp"
#include "core/coroutine_exception.hpp"
#include "core/refusals.hpp"

#include "http/digest_body.hpp"
#include "http/header_policy.hpp"
#include "io/accept_loop.hpp"
#include "io/timed_stream.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/write.hpp>

namespace spe {
namespace {

using CopyParser = http::request_parser<DigestBody>;

/// The refusal: a 502 the proxy passes on, its reason in a header the Multiplier reads (REPLAY_REFUSED).
http::response<http::string_body> refusal(const std::string& reason, bool keep_alive) {
    http::response<http::string_body> res{static_cast<http::status>(status_of(Refusal::replay_refused)), 11};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.set(http::field::cache_control, "no-store");
    res.set(kReplayRefusedHeader, reason.substr(0, 400));
    res.body() = "SPE replay port: this copy of an unsafe request was not sent to the origin: " + reason + "\n";
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

/// The client's reply for one proxy's copy: the stored header, this connection's framing.
http::response<http::span_body<const char>> replayed(const StoredReply& stored, bool keep_alive) {
    http::response<http::span_body<const char>> res;
    res.base() = stored.header;
    res.version(11);
    res.body() = {stored.body.data(), stored.body.size()};
    res.keep_alive(keep_alive);
    const auto status = res.result_int();
    if (status >= 200 && status != 204 && status != 304) res.prepare_payload();
    return res;
}

}  // namespace

ReplayServer::ReplayServer(asio::io_context& ioc, const tcp::endpoint& at, std::shared_ptr<ReplayStore> store,
                           ReplayLimits limits)
    : ioc_(ioc), acceptor_(ioc), store_(std::move(store)), limits_(limits) {
    listen_on(acceptor_, at);
}

void ReplayServer::start() {
    auto self = shared_from_this();
    // A strand per connection: its coroutine and its stream's timer never run at once (--threads > 1).
    asio::co_spawn(
        ioc_,
        accept_until_closed(
            acceptor_, "replay port: ", [this] { return asio::make_strand(ioc_); },
            [self](tcp::socket socket) { self->admit(std::move(socket)); }),
        report_exception([self](const char* what) { spdlog::critical("the replay port stopped: {}", what); }));
}

void ReplayServer::stop() {
    asio::post(ioc_, [self = shared_from_this()] {
        error_code ignored;
        self->acceptor_.close(ignored);
    });
}

void ReplayServer::admit(tcp::socket socket) {
    error_code ec;
    auto peer = socket.remote_endpoint(ec);
    if (ec || !peer.address().is_loopback()) {
        spdlog::warn("replay port: refused a connection from {} (loopback only)",
                     ec ? std::string("?") : peer.address().to_string());
        return;  // the socket closes as it goes
    }
    auto executor = socket.get_executor();
    asio::co_spawn(executor, serve(std::move(socket)), asio::detached);
}

awaitable<void> ReplayServer::serve(tcp::socket socket) {
    auto self = shared_from_this();
    TimedStream stream(std::move(socket));
    beast::flat_buffer buffer(limits_.max_header_bytes + 64 * 1024);
    try {
        while (co_await serve_one(stream, buffer)) {
        }
    } catch (const std::exception& e) {
        spdlog::warn("replay port: connection ended by an internal error: {}", e.what());
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
}

awaitable<bool> ReplayServer::refuse_too_large(TimedStream& stream) {
    // The client's own request could not have been larger: this copy is not the client's.
    auto res = refusal("the body is larger than --max-request-body", false);
    error_code ec;
    stream.expires_after(limits_.idle_timeout);
    co_await http::async_write(stream, res, with_ec(ec));
    co_return false;
}

awaitable<bool> ReplayServer::serve_one(TimedStream& stream, beast::flat_buffer& buffer) {
    CopyParser parser;
    parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser.body_limit(limits_.max_request_body);
    error_code ec;
    stream.expires_after(limits_.idle_timeout);
    co_await http::async_read_header(stream, buffer, parser, with_ec(ec));
    if (ec == http::error::body_limit) co_return co_await refuse_too_large(stream);
    if (ec) co_return false;  // the Collector closed an idle connection, or sent no HTTP
    if (!parser.is_done()) {
        if (parser.get().version() >= 11 && spe::iequals(parser.get()[http::field::expect], "100-continue")) {
            static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            co_await asio::async_write(stream, asio::buffer(kContinue.data(), kContinue.size()), with_ec(ec));
        }
        stream.expires_after(limits_.idle_timeout);
        co_await http::async_read(stream, buffer, parser, with_ec(ec));
        if (ec == http::error::body_limit) co_return co_await refuse_too_large(stream);
        if (ec) {
            spdlog::warn("replay port: reading a copy's body failed: {}", ec.message());
            co_return false;
        }
    }
    auto& copy = parser.get();
    UnsafeRequestFacts facts{std::string(copy.method_string()), copy.body().digest.hex_final(),
                             copy.body().digest.bytes()};
    const std::string tag(copy[kRequestTagHeader]);
    const bool keep_alive = copy.keep_alive();
    auto found = store_->find(tag, facts);

    if (auto* reason = std::get_if<std::string>(&found)) {
        spdlog::info("replay port: refused {} {} (tag {}): {}", facts.method, std::string(copy.target()),
                     tag.empty() ? "-" : tag, *reason);
        auto res = refusal(*reason, keep_alive);
        stream.expires_after(limits_.idle_timeout);
        co_await http::async_write(stream, res, with_ec(ec));
        co_return !ec && keep_alive;
    }
    const auto& stored = *std::get<std::shared_ptr<const StoredReply>>(found);
    // The proxies pay what the client paid for its first byte, as the Collector's
    // replayed misses do: a proxy's unsafe request is not faster than the origin.
    if (stored.delay_us > 0) {
        asio::steady_timer wait(stream.get_executor());
        wait.expires_after(std::min<Clock::duration>(std::chrono::microseconds(stored.delay_us), limits_.idle_timeout));
        co_await wait.async_wait(with_ec(ec));
    }
    auto res = replayed(stored, keep_alive);
    stream.expires_after(limits_.idle_timeout);
    co_await http::async_write(stream, res, with_ec(ec));
    co_return !ec && keep_alive;
}

}  // namespace spe
