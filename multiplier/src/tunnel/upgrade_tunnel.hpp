// An HTTP Upgrade (a WebSocket, above all) is tunnelled, never multiplied:
// after the switch its bytes are a conversation, not a reply a proxy could
// repeat. The request goes to the Collector (which speaks TLS to the origin
// when it came through an intercepted tunnel, and lets the upgrade through:
// http_upgrade_request_protocols), and after its 101 both connections are
// joined until either side ends. One record; no proxy under test sees it.
#pragma once

#include "core/config.hpp"
#include "core/measurement.hpp"
#include "core/net.hpp"
#include "core/refusals.hpp"
#include "http/read_buffer.hpp"
#include "io/client_stream.hpp"

namespace spe {

/// An Upgrade header, and Connection naming it (RFC 9110 7.8).
bool is_upgrade_request(const Request& req);

/// `upstream` is the upstream copy of the request (hop-by-hop headers gone);
/// its Upgrade is put back from `client_request`. Returns the refusal for the client when the upgrade
/// did not happen (nullopt once it did).
awaitable<std::optional<Refused>> run_upgrade_tunnel(ClientStream& client, ReadBuffer& client_buffer,
                                                     const Request& client_request, Request upstream, const Config& cfg,
                                                     const std::vector<tcp::endpoint>& collector,
                                                     RequestRecord& record);

}  // namespace spe
