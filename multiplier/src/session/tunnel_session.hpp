// Bytes passed on, never multiplied: a CONNECT the Multiplier does not read
// (without --intercept-tls, to a --no-intercept host, from a client that
// speaks no TLS), or a connection the Collector switched to another protocol
// (an Upgrade: a WebSocket). The downstream session, or an interception, hands
// it the client connection (the bytes already read included) and the record;
// it runs the tunnel (tunnel/) to its end and logs the record.
#pragma once

#include "context/server_context.hpp"
#include "core/measurement.hpp"
#include "core/refusals.hpp"
#include "io/client_connection.hpp"
#include "tunnel/connect_tunnel.hpp"

#include <optional>

namespace spe {

class TunnelSession {
public:
    TunnelSession(ServerContext& ctx, ClientConnection& client) : ctx_(ctx), client_(client) {}

    /// A CONNECT tunnelled through the Collector. When it could not be opened and the client has no
    /// 200 yet, returns the refusal for the downstream session to answer with `record`; else the
    /// record is logged here.
    awaitable<std::optional<Refused>> connect(const TunnelRequest& tunnel, RequestRecord& record);

    /// An Upgrade through the Collector (`upstream`: the request's upstream copy), the two
    /// connections joined after its 101. When the Collector did not switch, returns the refusal for
    /// the downstream session to answer with `record`; else the record is logged here.
    awaitable<std::optional<Refused>> upgrade(const Request& request, Request upstream, RequestRecord& record);

private:
    ServerContext& ctx_;
    ClientConnection& client_;
};

}  // namespace spe
