#include "session/downstream_session.hpp"
#include "core/ascii.hpp"
#include "core/coroutine_exception.hpp"
#include "core/wall_clock.hpp"

#include "http/md5_digest.hpp"
#include "http/request_policy.hpp"
#include "io/lingering_close.hpp"
#include "judge/cache_judge.hpp"
#include "log/result_log.hpp"
#include "session/fanout.hpp"
#include "tls/tls_interceptor.hpp"
#include "tunnel/connect_tunnel.hpp"
#include "tunnel/upgrade_tunnel.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <utility>

namespace spe {
namespace {

std::string address_of(const tcp::socket& s) {
    error_code ec;
    auto ep = s.remote_endpoint(ec);
    if (ec) return "-";
    auto a = ep.address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

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

/// Why a TLS handshake ended that the client broke off (or sent nonsense).
std::string handshake_ended(const error_code& ec) {
    if (ec == beast::error::timeout) return "the client did not finish the handshake in time";
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated || ec == asio::error::connection_reset ||
        ec == asio::error::broken_pipe)
        return "the client closed the connection during the handshake";
    return ec.message();
}

}  // namespace

DownstreamSession::DownstreamSession(tcp::socket socket, std::shared_ptr<ServerContext> ctx)
    : ctx_(std::move(ctx)),
      client_(std::move(socket)),
      io_(client_),
      buffer_(read_buffer_limit(ctx_->config())),
      client_address_(address_of(client_.socket())),
      collector_(client_.get_executor(), *ctx_),
      pools_(std::make_shared<ProxyPools>(ctx_->fanout_executor(client_.get_executor()), ctx_->proxies(),
                                          ctx_->config().max_conns_per_proxy, read_buffer_limit(ctx_->config()))),
      work_(*ctx_) {
    error_code ec;
    client_.socket().set_option(tcp::no_delay(true), ec);
}

void DownstreamSession::start() {
    ctx_->register_abortable(shared_from_this());
    ctx_->register_abortable(pools_);
    asio::co_spawn(client_.get_executor(), run(), report_exception([self = shared_from_this()](const char* what) {
                       spdlog::error("client {}: session ended by an internal error: {}", self->client_address_, what);
                       self->close();
                   }));
}

void DownstreamSession::stop_if_idle() {
    asio::post(client_.get_executor(), [self = shared_from_this()] {
        // Cancel, don't close: a request whose read has just completed (its
        // handler already queued) is still answered on the open socket; a read
        // still waiting ends with operation_aborted and the session closes.
        if (self->idle_) self->client_.cancel();
    });
}

void DownstreamSession::abort() {
    asio::post(client_.get_executor(), [self = shared_from_this()] { self->close(); });
}

void DownstreamSession::close() {
    error_code ignored;
    client_.socket().close(ignored);
    collector_.close();
    pools_->client_closed();
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
        co_await lingering_close(client_, limits);
    } else {
        if (auto* tls = io_.tls_stream(); tls && client_.socket().is_open()) {
            // close_notify, so the client knows the stream was not cut short; bounded, the client may not answer.
            error_code ignored;
            client_.expires_after(std::min<Clock::duration>(ctx_->config().client_timeout, std::chrono::seconds(2)));
            co_await tls->async_shutdown(with_ec(ignored));
        }
        error_code ignored;
        client_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    close();
}

RequestRecord DownstreamSession::new_record(const Request& req) {
    RequestRecord r;
    r.ts = unix_seconds();
    r.id = ctx_->next_request_id();
    r.client = client_address_;
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

awaitable<bool> DownstreamSession::wait_for_request() {
    if (buffer_.size() > 0) co_return true;  // a pipelined request is already buffered
    idle_ = true;
    if (ctx_->stopping()) co_return false;
    buffer_.shrink_to_fit();
    // Inside TLS the engine may hold a whole request already read from the
    // socket, which then shows nothing: the read itself waits (serve_one).
    if (io_.tls()) co_return true;
    error_code ec;
    client_.expires_after(ctx_->config().client_timeout);
    co_await client_.async_wait_readable(with_ec(ec));
    co_return !ec;
}

awaitable<bool> DownstreamSession::serve_one() {
    const auto& cfg = ctx_->config();
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.max_header_bytes));
    parser.body_limit(cfg.max_request_body);
    idle_ = buffer_.size() == 0;
    if (idle_ && ctx_->stopping()) co_return false;

    error_code ec;
    client_.expires_after(cfg.client_timeout);
    co_await http::async_read_header(io_, buffer_, parser, with_ec(ec));
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
            co_await asio::async_write(io_, asio::buffer(kContinue.data(), kContinue.size()), with_ec(ec));
        }
        client_.expires_after(cfg.client_timeout);
        co_await http::async_read(io_, buffer_, parser, with_ec(ec));
        if (ec) {
            const auto problem = read_problem(ec);
            co_await refuse(problem, std::move(record), head_request);
            co_return false;
        }
    }
    Request req = parser.release();
    const bool keep_alive = client_wants_keep_alive(req) && !ctx_->stopping();

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

awaitable<bool> DownstreamSession::forward(Request req, RequestRecord record, bool keep_alive) {
    const auto& cfg = ctx_->config();
    const bool head_request = req.method() == http::verb::head;
    auto upstream_request = make_upstream_request(req, cfg.via_name, keep_alive);
    if (!cfg.dummy) set_request_tag(upstream_request, ctx_->request_tag(record.id));
    if (intercepted_) upstream_request.set(kSchemeHeader, "https");
    record.tag = upstream_request[kRequestTagHeader];
    auto upstream = std::make_shared<const WireRequest>(std::move(upstream_request));
    const auto& store = ctx_->replay_store();
    std::optional<ReplayRecording> replay;
    if (store && !record.tag.empty() && is_unsafe_method(record.method)) replay.emplace(store->max_bytes());
    const std::string tag = record.tag;
    auto fanout = std::make_shared<Fanout>(ctx_, pools_, std::move(record), upstream, head_request);
    fanout->begin();

    auto out = co_await collector_.relay(*upstream, ClientSide{io_, head_request, req.version() >= 11, keep_alive},
                                         replay ? &*replay : nullptr);
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
            {std::move(out.measure), failed.status(), std::move(sent), "no fan-out: " + failed.reason});
        co_return next_request;
    }
    const auto status = out.measure.status.value_or(0);
    std::string shortfall;
    if (out.client_failed)
        shortfall = "no fan-out: the client went away during the reply";
    else if (out.measure.error != LegError::none)
        shortfall = "no fan-out: the Collector's reply broke off (" + out.measure.error_detail + ")";
    const bool whole = shortfall.empty();
    fanout->set_reference({std::move(out.measure), status, std::nullopt, std::move(shortfall)});
    if (!whole) co_return false;
    co_return out.keep_alive && !ctx_->stopping();
}

awaitable<void> DownstreamSession::keep_pace_with_measuring() {
    // The client is never held back for a proxy. But the fan-out executor (validation, the judge, the
    // record) can fall behind a client that sends faster than SPE measures, and every fan-out it has not
    // reached holds its record and request: unread, the client's next request waits in the socket instead.
    // The proxies play no part: a fan-out's reference is taken when the executor reaches it, whatever
    // its legs are waiting for. Checked with a timer (1 ms, doubling to 8 ms), not a wake-up from the
    // fan-out's thread: with one client thread its io_context is told no other thread touches it. The
    // bound is explicit, as every wait's: one fan-out's deadline.
    if (pools_->backlog() <= ProxyPools::kMaxBacklog) co_return;
    const auto limit = Clock::now() + fanout_turn_bound(ctx_->config(), ctx_->proxies().size());
    asio::steady_timer pause(client_.get_executor());
    Clock::duration recheck = std::chrono::milliseconds(1);
    error_code ec;
    while (pools_->backlog() > ProxyPools::kMaxBacklog && !ctx_->stopping() && Clock::now() < limit) {
        pause.expires_after(recheck);
        co_await pause.async_wait(with_ec(ec));
        recheck = std::min<Clock::duration>(recheck * 2, std::chrono::milliseconds(8));
    }
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
    client_.expires_after(ctx_->config().client_timeout);
    if (head_request) {
        http::response_serializer<http::string_body> sr(res);
        co_await http::async_write_header(io_, sr, with_ec(ec));
    } else {
        co_await http::async_write(io_, res, with_ec(ec));
    }
    if (ec) sent.error = classify(ec, true);
    co_return sent;
}

awaitable<void> DownstreamSession::refuse(const Refused& refused, RequestRecord record, bool head_request) {
    spdlog::debug("client {}: {} {} refused: {} {}", client_address_, record.method, record.url, refused.status(),
                  refused.reason);
    refused_ = true;
    co_await reply_from_multiplier(refused, head_request, false);
    record.client_status = refused.status();
    record.note = refused.reason;
    ctx_->log().write(record);
}

awaitable<void> DownstreamSession::upgrade(Request req, RequestRecord record) {
    const auto& cfg = ctx_->config();
    auto upstream = make_upstream_request(req, cfg.via_name, true);
    if (!cfg.dummy) set_request_tag(upstream, ctx_->request_tag(record.id));
    if (intercepted_) upstream.set(kSchemeHeader, "https");
    record.tag = upstream[kRequestTagHeader];
    const auto refused =
        co_await run_upgrade_tunnel(io_, buffer_, req, std::move(upstream), cfg, ctx_->collector(), record);
    if (refused)
        co_await refuse(*refused, std::move(record), false);
    else
        ctx_->log().write(record);
}

std::string DownstreamSession::client_ip() const {
    return client_address_.substr(0, client_address_.rfind(':'));
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
        if (plain.why.empty()) co_return co_await intercept(*target, req.version(), std::move(record));
    }
    co_await tunnel(plain, std::move(record));
    co_return false;
}

awaitable<void> DownstreamSession::tunnel(const TunnelRequest& request, RequestRecord record) {
    const auto refused =
        co_await run_connect_tunnel(client_, buffer_, request, ctx_->config(), ctx_->collector(), record);
    if (!refused) {
        ctx_->log().write(record);
    } else if (!request.established) {
        co_await refuse(*refused, std::move(record), false);
    } else {
        // The client has its 200 already: closing is all that is left to tell it.
        record.note = "CONNECT (" + request.why + "): " + refused->reason + "; the connection was closed";
        ctx_->log().write(record);
    }
}

awaitable<std::optional<bool>> DownstreamSession::client_speaks_tls() {
    constexpr unsigned char kTlsHandshakeRecord = 0x16;  // RFC 8446 5.1: a ClientHello comes in one
    if (buffer_.size() > 0)
        co_return static_cast<unsigned char>(*static_cast<const char*>(buffer_.data().data())) == kTlsHandshakeRecord;
    error_code ec;
    client_.expires_after(ctx_->config().client_timeout);
    co_await client_.async_wait_readable(with_ec(ec));
    unsigned char first = 0;
    if (!ec) client_.socket().receive(asio::buffer(&first, 1), tcp::socket::message_peek, ec);
    if (ec) co_return std::nullopt;
    co_return first == kTlsHandshakeRecord;
}

awaitable<DownstreamSession::HelloRead> DownstreamSession::read_client_hello() {
    HelloRead out;
    client_.expires_after(ctx_->config().client_timeout);  // for the whole ClientHello, however it trickles in
    for (;;) {
        auto scan = scan_client_hello({static_cast<const char*>(buffer_.data().data()), buffer_.size()});
        if (scan.status == ClientHelloScan::Status::complete) {
            out.hello = std::move(scan.hello);
            co_return out;
        }
        const auto room = buffer_.max_size() - buffer_.size();
        if (scan.status == ClientHelloScan::Status::not_client_hello || room == 0) co_return out;
        error_code ec;
        const auto want = std::min(room, std::max<std::size_t>(scan.wanted - buffer_.size(), 16 * 1024));
        const auto n = co_await client_.async_read_some(buffer_.prepare(want), with_ec(ec));
        buffer_.commit(n);
        if (ec) {
            out.ended = ec;
            co_return out;
        }
    }
}

awaitable<bool> DownstreamSession::intercept(const ConnectTarget& target, unsigned client_version,
                                             RequestRecord record) {
    const auto& cfg = ctx_->config();
    auto& interceptor = *ctx_->interceptor();
    error_code ec;
    const auto established = connection_established(cfg.via_name);
    client_.expires_after(cfg.client_timeout);
    co_await asio::async_write(client_, asio::buffer(established), with_ec(ec));
    record.client_status = 200;
    if (ec) {
        record.note = "CONNECT intercepted: the client went away before the TLS handshake";
        ctx_->log().write(record);
        co_return false;
    }
    const auto tls = co_await client_speaks_tls();
    if (!tls) {
        record.note = "CONNECT intercepted: the client sent nothing before it closed or timed out";
        ctx_->log().write(record);
        co_return false;
    }
    if (!*tls) {
        // Named, not a temporary in the co_await: GCC 12 destroys such a temporary twice.
        const TunnelRequest fallback{target, client_version, "the client's first bytes are not TLS", true};
        co_await tunnel(fallback, std::move(record));
        co_return false;
    }

    // The SNI may name a --no-intercept host the CONNECT did not (an app that connects by address), and the
    // ClientHello tells a client that refused SPE's certificate apart from others on its address.
    const auto read = co_await read_client_hello();
    if (read.ended) {
        // Not handed to TLS: after the end of the stream Asio would wait for more (for --client-timeout).
        record.note = "CONNECT intercepted: TLS handshake failed: " + handshake_ended(read.ended);
        ctx_->log().write(record);
        co_return false;
    }
    if (read.hello) {
        const TunnelRequest opaque{target, client_version,
                                   interceptor.tunnel_reason(client_ip(), target.bare_host(), *read.hello), true};
        if (!opaque.why.empty()) {
            co_await tunnel(opaque, std::move(record));
            co_return false;
        }
    }

    std::string already_read(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    auto& stream = io_.start_tls(interceptor.context(), std::move(already_read));
    HandshakeFacts facts;
    facts.connect_host = target.bare_host();
    TlsInterceptor::attach(stream.native_handle(), &facts);
    client_.expires_after(cfg.client_timeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server, with_ec(ec));
    TlsInterceptor::attach(stream.native_handle(), nullptr);
    if (ec) {
        std::string why;
        if (!facts.problem.empty()) {
            why = facts.problem;
        } else if (TlsInterceptor::client_refused_certificate(ec)) {
            const std::string name = facts.leaf_name.empty() ? facts.connect_host : facts.leaf_name;
            why = "the client refused SPE's certificate (" + ec.message() + ")";
            if (read.hello) {
                interceptor.remember_refusal(client_ip(), *read.hello, name);
                why += "; its CONNECTs to " + name + " (the same address and TLS fingerprint " +
                       read.hello->fingerprint + ") are tunnelled for the next " +
                       std::to_string(TlsInterceptor::kRefusalMemory.count()) + " s";
            }
        } else {
            why = handshake_ended(ec);
        }
        record.note = "CONNECT intercepted: TLS handshake failed: " + why;
        spdlog::debug("client {}: {}", client_address_, record.note);
        ctx_->log().write(record);
        co_return false;
    }
    SSL* ssl = stream.native_handle();
    const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    // A resumed session (a browser's further connections to a host) chose no certificate this time.
    record.note = "CONNECT intercepted: " + std::string(SSL_get_version(ssl)) +
                  (SSL_session_reused(ssl) ? ", resumed session for " : ", certificate for ") +
                  (sni ? std::string(sni) : facts.connect_host + " (no SNI)");
    ctx_->log().write(record);
    intercepted_ = target;
    co_return true;
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
