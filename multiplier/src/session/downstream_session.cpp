#include "session/downstream_session.hpp"
#include "core/ascii.hpp"
#include "core/coroutine_exception.hpp"
#include "core/steady_clock.hpp"
#include "core/wall_clock.hpp"

#include "fanout/fanout.hpp"
#include "http/md5_digest.hpp"
#include "http/request_policy.hpp"
#include "io/lingering_close.hpp"
#include "judge/cache_judge.hpp"
#include "log/result_log.hpp"
#include "session/intercept_session.hpp"
#include "session/tunnel_session.hpp"
#include "tls/tls_interceptor.hpp"
#include "tunnel/upgrade_tunnel.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <utility>

namespace spe {
namespace {

/// What an idle client connection's buffer holds for its next request's first bytes: most requests
/// of a load generator fit, a browser's with cookies go on in the parser's read (at most 0.5 KB of
/// each idle connection's memory).
constexpr std::size_t kIdleReadBytes = 512;

/// The refusal a client gets for a request that could not be read.
Refused read_problem(const error_code& ec) {
    if (ec == http::error::header_limit)
        return {Refusal::header_too_large, "the request header is larger than --max-header-bytes"};
    if (ec == http::error::body_limit)
        return {Refusal::body_too_large, "the request body is larger than --max-request-body"};
    if (ec == beast::error::timeout) return {Refusal::request_timeout, "the request did not arrive in time"};
    if (ec == http::error::buffer_overflow)
        return {Refusal::malformed_request,
                "more unparsed request data than the Multiplier buffers (oversized chunk extension?)"};
    return {Refusal::malformed_request, "malformed request: " + ec.message()};
}

}  // namespace

DownstreamSession::DownstreamSession(tcp::socket socket, std::shared_ptr<ServerContext> ctx)
    : ctx_(std::move(ctx)),
      client_(std::move(socket), read_buffer_limit(ctx_->config())),
      collector_(client_.transport.get_executor(), *ctx_),
      fanouts_(std::make_shared<ClientFanouts>(ctx_->fanout_executor(client_.transport.get_executor()), ctx_->proxies(),
                                               ctx_->config().max_conns_per_proxy, read_buffer_limit(ctx_->config()))),
      work_(ctx_->stop()),
      connection_(ctx_->load()) {}

void DownstreamSession::start() {
    ctx_->stop().register_abortable(shared_from_this());
    ctx_->stop().register_abortable(fanouts_);
    asio::co_spawn(client_.transport.get_executor(), run(),
                   report_exception([self = shared_from_this()](const char* what) {
                       spdlog::error("client {}: session ended by an internal error: {}", self->client_.address, what);
                       self->close();
                   }));
}

void DownstreamSession::stop_if_idle() {
    asio::post(client_.transport.get_executor(), [self = shared_from_this()] {
        // Cancel, don't close: a request whose read has just completed (its
        // handler already queued) is still answered on the open socket; a read
        // still waiting ends with operation_aborted and the session closes.
        if (self->idle_) self->client_.transport.cancel();
    });
}

void DownstreamSession::abort() {
    asio::post(client_.transport.get_executor(), [self = shared_from_this()] { self->close(); });
}

void DownstreamSession::close() {
    error_code ignored;
    client_.transport.socket().close(ignored);
    collector_.close();
    fanouts_->client_closed();
}

awaitable<void> DownstreamSession::run() {
    auto self = shared_from_this();
    // Two statements, not `a && b`: GCC 12 creates the second coroutine (its
    // frame, the size of serve_one's locals) before awaiting the first.
    for (;;) {
        if (!co_await wait_for_request()) break;
        co_await keep_pace_with_measuring();
        if (!co_await serve_one()) break;
    }
    if (refused_) {
        // The client may still be sending what we refused: let it read the reply first.
        const LingerLimits limits{std::min<Clock::duration>(ctx_->config().client_timeout, std::chrono::seconds(5))};
        co_await lingering_close(client_.transport, limits);
    } else {
        if (auto* tls = client_.stream.tls_stream(); tls && client_.transport.socket().is_open()) {
            // close_notify, so the client knows the stream was not cut short; bounded, the client may not answer.
            error_code ignored;
            client_.transport.expires_after(
                std::min<Clock::duration>(ctx_->config().client_timeout, std::chrono::seconds(2)));
            co_await tls->async_shutdown(with_ec(ignored));
        }
        error_code ignored;
        client_.transport.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    close();
}

RequestRecord DownstreamSession::new_record(const Request& req) {
    RequestRecord r;
    r.ts = unix_seconds();
    r.id = ctx_->next_request_id();
    r.client = client_.address;
    r.client_held_us = std::exchange(held_us_, std::nullopt);  // a hold belongs to the request read after it
    r.method = req.method_string().empty() ? "-" : std::string(req.method_string());
    r.url = req.target().empty() ? "-" : std::string(req.target());
    if (intercepted_) {
        r.intercepted = true;
        if (auto t = intercepted_target(req.target(), *intercepted_)) r.url = std::move(t->url);
    }
    r.version = req.version() == 10 ? "HTTP/1.0"
                : req.version() == 11
                    ? "HTTP/1.1"
                    : "HTTP/" + std::to_string(req.version() / 10) + "." + std::to_string(req.version() % 10);
    r.validation = is_validation(req);
    return r;
}

std::shared_ptr<ClientOrder> DownstreamSession::client_order(const Request& req) {
    if (ctx_->config().order != OrderScope::client || ctx_->proxies().empty()) return nullptr;
    // One address may be many clients (a load generator's users): X-SPE-Client tells them apart.
    std::string key = client_.ip();
    if (const auto named = req.find(kClientHeader); named != req.end()) key.append("/").append(named->value());
    if (!order_ || key != order_key_) {
        order_ = ctx_->client_orders().of(key);
        order_key_ = std::move(key);
    }
    return order_;
}

awaitable<bool> DownstreamSession::wait_for_request() {
    if (client_.buffer.size() > 0) co_return true;  // a pipelined request is already buffered
    idle_ = true;
    if (ctx_->stop().stopping()) co_return false;
    client_.buffer.shrink_to_fit();
    // Inside TLS the engine may hold a whole request already read from the
    // socket, which then shows nothing: the read itself waits (serve_one).
    if (client_.stream.tls()) co_return true;
    // A read, not a wait for readability: Asio (1.74, epoll) re-arms the socket with an epoll_ctl for
    // every wait, while a read after one that emptied the socket is queued without a system call. The
    // bytes it takes are the next request's, parsed from the buffer by serve_one.
    error_code ec;
    client_.transport.expires_after(ctx_->config().client_timeout);
    const auto n = co_await client_.transport.async_read_some(
        client_.buffer.prepare(std::min(kIdleReadBytes, client_.buffer.max_size())), with_ec(ec));
    client_.buffer.commit(n);
    co_return !ec;
}

awaitable<bool> DownstreamSession::serve_one() {
    const auto& cfg = ctx_->config();
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.max_header_bytes));
    parser.body_limit(cfg.max_request_body);
    idle_ = client_.buffer.size() == 0;
    if (idle_ && ctx_->stop().stopping()) co_return false;

    error_code ec;
    client_.transport.expires_after(cfg.client_timeout);
    co_await http::async_read_header(client_.stream, client_.buffer, parser, with_ec(ec));
    idle_ = false;
    if (ec) {
        // A connection that closes or times out between requests is normal.
        if (!parser.got_some() || ec == asio::error::operation_aborted) co_return false;
        Request partial;
        if (parser.is_header_done()) partial = parser.get();
        const auto problem = read_problem(ec);
        co_await refuse(problem, new_record(partial), false);
        co_return false;
    }

    auto record = new_record(parser.get());
    const bool head_request = parser.get().method() == http::verb::head;
    if (!parser.is_done()) {
        // RFC 9110 10.1.1: never to an HTTP/1.0 client, which may not understand it.
        if (parser.get().version() >= 11 && spe::iequals(parser.get()[http::field::expect], "100-continue")) {
            static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
            co_await asio::async_write(client_.stream, asio::buffer(kContinue.data(), kContinue.size()), with_ec(ec));
        }
        client_.transport.expires_after(cfg.client_timeout);
        co_await http::async_read(client_.stream, client_.buffer, parser, with_ec(ec));
        if (ec) {
            const auto problem = read_problem(ec);
            co_await refuse(problem, std::move(record), head_request);
            co_return false;
        }
    }
    Request req = parser.release();
    const bool keep_alive = client_wants_keep_alive(req) && !ctx_->stop().stopping();

    if (req.method() == http::verb::connect) co_return co_await connect(req, std::move(record));
    if (intercepted_ && !co_await adopt_intercepted(req, record)) co_return false;
    if (const auto problem = check_request(req, cfg)) {
        co_await refuse(*problem, std::move(record), head_request);
        co_return false;
    }
    if (is_upgrade_request(req)) {
        co_await upgrade(std::move(req), std::move(record));
        co_return false;
    }
    co_return co_await forward(std::move(req), std::move(record), keep_alive);
}

Request DownstreamSession::tagged_upstream(const Request& req, RequestRecord& record, bool keep_alive) const {
    const auto& cfg = ctx_->config();
    auto upstream = make_upstream_request(req, cfg.via_name, keep_alive);
    if (!cfg.dummy) set_request_tag(upstream, ctx_->request_tag(record.id));
    if (intercepted_) upstream.set(kSchemeHeader, "https");
    record.tag = upstream[kRequestTagHeader];
    return upstream;
}

awaitable<bool> DownstreamSession::forward(Request req, RequestRecord record, bool keep_alive) {
    const auto& cfg = ctx_->config();
    const bool head_request = req.method() == http::verb::head;
    auto upstream = std::make_shared<const WireRequest>(tagged_upstream(req, record, keep_alive));
    const auto& store = ctx_->replay_store();
    std::optional<ReplayRecording> replay;
    if (store && !record.tag.empty() && is_unsafe_method(record.method)) replay.emplace(store->max_bytes());
    const std::string tag = record.tag;
    auto fanout =
        std::make_shared<Fanout>(ctx_, fanouts_, client_order(req), std::move(record), upstream, head_request);
    fanout->begin();

    auto out =
        co_await collector_.relay(*upstream, ClientSide{client_.stream, head_request, req.version() >= 11, keep_alive},
                                  replay ? &*replay : nullptr, fanout->compares_bodies());
    // First, before anything else can let the client's next request in: it comes after this one.
    if (out.client_answered && !out.client_failed && out.measure.error == LegError::none) fanout->delivered();
    // Kept before the fan-out starts (set_reference): the proxies' copies will ask for it.
    if (replay && out.client_answered && !out.client_failed && out.measure.error == LegError::none)
        replay->keep(
            *store, tag,
            {std::string(req.method_string()), md5_hex(req.body().data(), req.body().size()), req.body().size()},
            out.measure.ttfb_us.value_or(0));
    // A client that went away while an interim (1xx) reply was relayed has no final reply to get.
    if (!out.client_answered && !out.client_failed) {
        const Refused failed{collector_failure(out.measure.error),
                             "the Collector at " + cfg.collector->to_string() + " failed: " +
                                 std::string(to_string(out.measure.error)) + " (" + out.measure.error_detail + ")"};
        auto sent = co_await reply_from_multiplier(failed, head_request, keep_alive);
        const bool next_request = keep_alive && sent.error == LegError::none;
        fanout->set_reference(
            {std::move(out.measure), failed.status(), std::move(sent), "no fan-out: " + failed.reason, nullptr});
        co_return next_request;
    }
    const auto status = out.measure.status.value_or(0);
    std::string shortfall;
    if (out.client_failed)
        shortfall = "no fan-out: the client went away during the reply";
    else if (out.measure.error != LegError::none)
        shortfall = "no fan-out: the Collector's reply broke off (" + out.measure.error_detail + ")";
    const bool whole = shortfall.empty();
    fanout->set_reference(
        {std::move(out.measure), status, std::nullopt, std::move(shortfall), whole ? std::move(out.body) : nullptr});
    if (!whole) co_return false;
    co_return out.keep_alive && !ctx_->stop().stopping();
}

awaitable<void> DownstreamSession::keep_pace_with_measuring() {
    // The client is never held back for a proxy. But the fan-out executor (validation, the judge, the
    // record) can fall behind a client that sends faster than SPE measures, and every fan-out it has not
    // reached holds its record and request: unread, the client's next request waits in the socket instead.
    // The proxies play no part: a fan-out's reference is taken when the executor reaches it, whatever
    // its legs are waiting for. Checked with a timer (1 ms, doubling to 8 ms), not a wake-up from the
    // fan-out's thread: with one client thread its io_context is told no other thread touches it. The
    // bound is explicit, as every wait's: one fan-out's deadline. The hold is part of what the client
    // experiences through SPE, so it is measured and goes on the record of the request read next.
    const auto bound = ctx_->config().max_fanout_backlog;
    if (fanouts_->backlog().backlog() <= bound || ctx_->stop().stopping()) co_return;
    const auto started = Clock::now();
    const auto limit = started + client_hold_bound(ctx_->config(), ctx_->proxies().size());
    asio::steady_timer pause(client_.transport.get_executor());
    Clock::duration recheck = std::chrono::milliseconds(1);
    error_code ec;
    while (fanouts_->backlog().backlog() > bound && !ctx_->stop().stopping() && Clock::now() < limit) {
        pause.expires_after(recheck);
        co_await pause.async_wait(with_ec(ec));
        recheck = std::min<Clock::duration>(recheck * 2, std::chrono::milliseconds(8));
    }
    held_us_ = micros_since(started);
}

awaitable<Measure> DownstreamSession::reply_from_multiplier(const Refused& refused, bool head_request,
                                                            bool keep_alive) {
    const auto status = refused.status();
    const auto& reason = refused.reason;
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::server, ctx_->config().via_name);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.set(http::field::cache_control, "no-store");
    res.set("X-SPE-Error", reason.substr(0, 200));
    res.body() = "SPE Multiplier: " + std::to_string(status) + " " + std::string(res.reason()) + "\n" + reason + "\n";
    res.keep_alive(keep_alive);
    res.prepare_payload();

    Measure sent;
    sent.status = status;
    sent.version = 11;
    sent.bytes = res.body().size();
    sent.md5 = md5_hex(res.body().data(), res.body().size());
    sent.headers = ctx_->policy().select(res.base());
    error_code ec;
    client_.transport.expires_after(ctx_->config().client_timeout);
    if (head_request) {
        http::response_serializer<http::string_body> sr(res);
        co_await http::async_write_header(client_.stream, sr, with_ec(ec));
    } else {
        co_await http::async_write(client_.stream, res, with_ec(ec));
    }
    if (ec) sent.error = classify(ec, true);
    co_return sent;
}

awaitable<void> DownstreamSession::refuse(const Refused& refused, RequestRecord record, bool head_request) {
    spdlog::debug("client {}: {} {} refused: {} {}", client_.address, record.method, record.url, refused.status(),
                  refused.reason);
    refused_ = true;
    co_await reply_from_multiplier(refused, head_request, false);
    record.client_status = refused.status();
    record.note = refused.reason;
    ctx_->log().write(record);
}

awaitable<void> DownstreamSession::upgrade(Request req, RequestRecord record) {
    auto upstream = tagged_upstream(req, record, true);
    TunnelSession tunnel(*ctx_, client_);
    if (const auto refused = co_await tunnel.upgrade(req, std::move(upstream), record))
        co_await refuse(*refused, std::move(record), false);
}

awaitable<bool> DownstreamSession::connect(const Request& req, RequestRecord record) {
    const auto& cfg = ctx_->config();
    std::string bad_target;
    auto target = parse_connect_target(req.target(), &bad_target);
    // The reasons are named, not temporaries in the co_await: GCC 12 mishandles those.
    std::optional<Refused> problem;
    if (intercepted_)
        problem = Refused{Refusal::bad_connect, "CONNECT inside an intercepted tunnel"};
    else if (!target)
        problem = Refused{Refusal::bad_connect, bad_target};
    else if (std::find(cfg.connect_ports.begin(), cfg.connect_ports.end(), target->port) == cfg.connect_ports.end())
        problem = Refused{Refusal::connect_port_not_allowed,
                          "CONNECT to port " + std::to_string(target->port) + " is not allowed (see --connect-port)"};
    if (problem) {
        co_await refuse(*problem, std::move(record), false);
        co_return false;
    }
    TunnelRequest plain{*target, req.version(), "", false};
    if (auto* interceptor = ctx_->interceptor()) {
        plain.why = interceptor->tunnel_reason(target->bare_host());
        if (plain.why.empty()) {
            // Sessions named, not temporaries in the co_await: GCC 12 mishandles those.
            InterceptSession interception(*ctx_, client_);
            if (!co_await interception.run(*target, req.version(), std::move(record))) co_return false;
            intercepted_ = target;
            co_return true;
        }
    }
    TunnelSession tunnel(*ctx_, client_);
    if (const auto refused = co_await tunnel.connect(plain, record))
        co_await refuse(*refused, std::move(record), false);
    co_return false;
}

awaitable<bool> DownstreamSession::adopt_intercepted(Request& req, RequestRecord& record) {
    auto target = intercepted_target(req.target(), *intercepted_);
    if (!target) {
        const Refused refused{Refusal::not_a_proxy_request,
                              "a request in an intercepted tunnel must have an origin-form target (/path)"};
        co_await refuse(refused, std::move(record), req.method() == http::verb::head);
        co_return false;
    }
    req.target(target->upstream_target);
    co_return true;
}

}  // namespace spe
