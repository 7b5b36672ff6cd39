// A CONNECT the Multiplier reads (--intercept-tls, tls/tls_interceptor.hpp):
// the downstream session hands it the client connection (bytes already read
// included). It answers 200, looks at the client's first bytes and
// ClientHello, and either passes the tunnel on unread (a TunnelSession: no
// TLS, a --no-intercept SNI, a client that refused SPE's certificate before)
// or answers with TLS and a leaf certificate for the host. After the
// handshake the connection's stream is TLS, and the downstream session reads
// the tunnel's requests through it as https ones.
#pragma once

#include "context/server_context.hpp"
#include "core/measurement.hpp"
#include "http/request_policy.hpp"
#include "io/client_connection.hpp"
#include "tls/client_hello.hpp"
#include "tls/tls_interceptor.hpp"
#include "tunnel/connect_tunnel.hpp"

#include <optional>
#include <string>

namespace spe {

class InterceptSession {
public:
    /// With ctx.interceptor() set.
    InterceptSession(ServerContext& ctx, ClientConnection& client);

    /// True once the TLS handshake is done: the connection's stream is TLS, its requests are read
    /// next. False: the connection has ended (the tunnel was passed on, or the handshake failed).
    /// The record of the CONNECT is logged either way.
    awaitable<bool> run(const ConnectTarget& target, unsigned client_version, RequestRecord record);

private:
    /// After the 200: whether the client's first byte starts a TLS record (nullopt: it sent none).
    awaitable<std::optional<bool>> client_speaks_tls();
    struct HelloRead {
        std::optional<ClientHello> hello;  // nullopt: not one the scan understands (TLS will say why)
        error_code ended;                  // the client closed, reset or went silent before it was whole
    };
    /// Reads into the connection's buffer (nothing consumed: the bytes go to TLS,
    /// or to the Collector when the tunnel is passed on) until the ClientHello is whole.
    awaitable<HelloRead> read_client_hello();
    /// The handshake over the bytes read so far; on failure, why (for the record).
    awaitable<std::optional<std::string>> handshake(const ConnectTarget& target, const HelloRead& read,
                                                    HandshakeFacts& facts);
    /// Why the handshake failed, and a client that refused SPE's certificate remembered.
    std::string handshake_failure(const error_code& ec, const HandshakeFacts& facts, const HelloRead& read);
    awaitable<void> pass_on(const TunnelRequest& tunnel, RequestRecord& record);
    void log(RequestRecord& record, std::string note);

    ServerContext& ctx_;
    ClientConnection& client_;
    TlsInterceptor& interceptor_;
};

}  // namespace spe
