// CONNECT without interception: a tunnel to the Collector, logged but not
// multiplied (the bytes are TLS the Multiplier does not read or replay).
#pragma once

#include "core/config.hpp"
#include "core/measurement.hpp"
#include "core/net.hpp"
#include "io/timed_stream.hpp"

#include "http/read_buffer.hpp"
#include "http/request_policy.hpp"
#include "io/upstream_connection.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <optional>
#include <string_view>

namespace spe {

/// `why` says, for the record, why the tunnel is not intercepted. With
/// `established`, the client already has its 200 (an interception that found
/// no TLS): the Collector's refusal can then only close the connection.
struct TunnelRequest {
    ConnectTarget target;
    unsigned client_version = 11;
    std::string why;
    bool established = false;
};

/// Runs the tunnel until both directions end. Returns the refusal for the client when the tunnel
/// could not be opened (nullopt once it was).
awaitable<std::optional<Refused>> run_connect_tunnel(TimedStream& client, ReadBuffer& client_buffer,
                                                     const TunnelRequest& tunnel, const Config& cfg,
                                                     const std::vector<tcp::endpoint>& collector,
                                                     RequestRecord& record);

/// The Collector's side of a tunnel (a CONNECT, an upgrade): sends `req` on `conn`, then reads the
/// reply header into `parser` (which skips any body: the tunnel starts right after the header),
/// measured into `m`. nullopt once the header is read; else the refusal for the client (`what`
/// names the request in its reason).
awaitable<std::optional<Refused>> collector_reply_header(UpstreamConnection& conn, const WireRequest& req,
                                                         http::response_parser<http::empty_body>& parser,
                                                         const Config& cfg, Measure& m, std::string_view what);

/// The client's answer once a tunnel is open (to the Collector, or to the Multiplier itself when intercepted).
std::string connection_established(const std::string& via_name);

}  // namespace spe
