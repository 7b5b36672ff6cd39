#include "session/intercept_session.hpp"

#include "log/result_log.hpp"
#include "session/tunnel_session.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <utility>

namespace spe {
namespace {

/// Why a TLS handshake ended that the client broke off (or sent nonsense).
std::string handshake_ended(const error_code& ec) {
    if (ec == beast::error::timeout) return "the client did not finish the handshake in time";
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated || ec == asio::error::connection_reset ||
        ec == asio::error::broken_pipe)
        return "the client closed the connection during the handshake";
    return ec.message();
}

}  // namespace

InterceptSession::InterceptSession(ServerContext& ctx, ClientConnection& client)
    : ctx_(ctx), client_(client), interceptor_(*ctx.interceptor()) {}

void InterceptSession::log(RequestRecord& record, std::string note) {
    record.note = std::move(note);
    ctx_.log().write(record);
}

awaitable<void> InterceptSession::pass_on(const TunnelRequest& tunnel, RequestRecord& record) {
    // The client has its 200: the tunnel session answers nothing more, it logs the record.
    TunnelSession session(ctx_, client_);
    co_await session.connect(tunnel, record);
}

awaitable<bool> InterceptSession::run(const ConnectTarget& target, unsigned client_version, RequestRecord record) {
    const auto& cfg = ctx_.config();
    error_code ec;
    const auto established = connection_established(cfg.via_name);
    client_.transport.expires_after(cfg.client_timeout);
    co_await asio::async_write(client_.transport, asio::buffer(established), with_ec(ec));
    record.client_status = 200;
    if (ec) {
        log(record, "CONNECT intercepted: the client went away before the TLS handshake");
        co_return false;
    }
    const auto tls = co_await client_speaks_tls();
    if (!tls) {
        log(record, "CONNECT intercepted: the client sent nothing before it closed or timed out");
        co_return false;
    }
    if (!*tls) {
        // Named, not a temporary in the co_await: GCC 12 destroys such a temporary twice.
        const TunnelRequest fallback{target, client_version, "the client's first bytes are not TLS", true};
        co_await pass_on(fallback, record);
        co_return false;
    }

    // The SNI may name a --no-intercept host the CONNECT did not (an app that connects by address), and the
    // ClientHello tells a client that refused SPE's certificate apart from others on its address.
    const auto read = co_await read_client_hello();
    if (read.ended) {
        // Not handed to TLS: after the end of the stream Asio would wait for more (for --client-timeout).
        log(record, "CONNECT intercepted: TLS handshake failed: " + handshake_ended(read.ended));
        co_return false;
    }
    if (read.hello) {
        const TunnelRequest opaque{target, client_version,
                                   interceptor_.tunnel_reason(client_.ip(), target.bare_host(), *read.hello), true};
        if (!opaque.why.empty()) {
            co_await pass_on(opaque, record);
            co_return false;
        }
    }

    HandshakeFacts facts;
    if (const auto failed = co_await handshake(target, read, facts)) {
        record.note = "CONNECT intercepted: TLS handshake failed: " + *failed;
        spdlog::debug("client {}: {}", client_.address, record.note);
        ctx_.log().write(record);
        co_return false;
    }
    SSL* ssl = client_.stream.tls_stream()->native_handle();
    const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    // A resumed session (a browser's further connections to a host) chose no certificate this time.
    log(record, "CONNECT intercepted: " + std::string(SSL_get_version(ssl)) +
                    (SSL_session_reused(ssl) ? ", resumed session for " : ", certificate for ") +
                    (sni ? std::string(sni) : facts.connect_host + " (no SNI)"));
    co_return true;
}

awaitable<std::optional<bool>> InterceptSession::client_speaks_tls() {
    constexpr unsigned char kTlsHandshakeRecord = 0x16;  // RFC 8446 5.1: a ClientHello comes in one
    auto& buffer = client_.buffer;
    if (buffer.size() > 0)
        co_return static_cast<unsigned char>(*static_cast<const char*>(buffer.data().data())) == kTlsHandshakeRecord;
    error_code ec;
    client_.transport.expires_after(ctx_.config().client_timeout);
    co_await client_.transport.async_wait_readable(with_ec(ec));
    unsigned char first = 0;
    if (!ec) client_.transport.socket().receive(asio::buffer(&first, 1), tcp::socket::message_peek, ec);
    if (ec) co_return std::nullopt;
    co_return first == kTlsHandshakeRecord;
}

awaitable<InterceptSession::HelloRead> InterceptSession::read_client_hello() {
    auto& buffer = client_.buffer;
    HelloRead out;
    client_.transport.expires_after(ctx_.config().client_timeout);  // for the whole ClientHello, however it trickles in
    for (;;) {
        auto scan = scan_client_hello({static_cast<const char*>(buffer.data().data()), buffer.size()});
        if (scan.status == ClientHelloScan::Status::complete) {
            out.hello = std::move(scan.hello);
            co_return out;
        }
        const auto room = buffer.max_size() - buffer.size();
        if (scan.status == ClientHelloScan::Status::not_client_hello || room == 0) co_return out;
        error_code ec;
        const auto want = std::min(room, std::max<std::size_t>(scan.wanted - buffer.size(), 16 * 1024));
        const auto n = co_await client_.transport.async_read_some(buffer.prepare(want), with_ec(ec));
        buffer.commit(n);
        if (ec) {
            out.ended = ec;
            co_return out;
        }
    }
}

awaitable<std::optional<std::string>> InterceptSession::handshake(const ConnectTarget& target, const HelloRead& read,
                                                                  HandshakeFacts& facts) {
    auto& buffer = client_.buffer;
    std::string already_read(static_cast<const char*>(buffer.data().data()), buffer.size());
    buffer.consume(buffer.size());
    auto& stream = client_.stream.start_tls(interceptor_.context(), std::move(already_read));
    facts.connect_host = target.bare_host();
    TlsInterceptor::attach(stream.native_handle(), &facts);
    error_code ec;
    client_.transport.expires_after(ctx_.config().client_timeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server, with_ec(ec));
    TlsInterceptor::attach(stream.native_handle(), nullptr);
    if (!ec) co_return std::nullopt;
    co_return handshake_failure(ec, facts, read);
}

std::string InterceptSession::handshake_failure(const error_code& ec, const HandshakeFacts& facts,
                                                const HelloRead& read) {
    if (!facts.problem.empty()) return facts.problem;
    if (!TlsInterceptor::client_refused_certificate(ec)) return handshake_ended(ec);
    const std::string name = facts.leaf_name.empty() ? facts.connect_host : facts.leaf_name;
    std::string why = "the client refused SPE's certificate (" + ec.message() + ")";
    if (read.hello) {
        interceptor_.remember_refusal(client_.ip(), *read.hello, name);
        why += "; its CONNECTs to " + name + " (the same address and TLS fingerprint " + read.hello->fingerprint +
               ") are tunnelled for the next " + std::to_string(TlsInterceptor::kRefusalMemory.count()) + " s";
    }
    return why;
}

}  // namespace spe
