// What the Multiplier accepts from a client and what it sends upstream:
// request checks (forward-proxy form, loops, smuggling) and the upstream copy.
#pragma once

#include "core/config.hpp"
#include "core/message_types.hpp"
#include "core/refusals.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

/// The target of a CONNECT request: "host:port" (an IPv6 host in brackets).
struct ConnectTarget {
    std::string host;  // as written, brackets included
    std::uint16_t port = 0;
    /// The host without IPv6 brackets: the name a certificate is made for.
    std::string bare_host() const;
};
/// A CONNECT target in authority-form only (RFC 9110 9.3.6): `reg-name:port`,
/// `IPv4address:port` or `[IPv6address]:port`, exactly one port, 1-65535 in
/// decimal without sign or leading zero. Refused (nullopt, the reason in
/// `why`): userinfo, a second port, no port, an empty host, IPv6 without
/// brackets, percent-encoding, whitespace, any character outside a host name
/// (letters, digits, '-', '.', '_'), and numeric hosts other than a dotted
/// quad (127.1, 0x7f.1, 0177.0.0.1: resolvers read them differently). The
/// Collector (Squid) reads "127.0.0.1:22:443" as port 22: a target two
/// parsers could read differently never passes.
std::optional<ConnectTarget> parse_connect_target(std::string_view target, std::string* why = nullptr);

/// A request read inside an intercepted tunnel: the target its upstream copy
/// gets (http, port always written, so https://h/x is http://h:443/x, an
/// object of its own in every cache), and its https URL for the record.
struct InterceptedTarget {
    std::string upstream_target;
    std::string url;
};
/// nullopt when the target is not origin-form (an absolute URL or "*" has no place in a tunnel).
std::optional<InterceptedTarget> intercepted_target(std::string_view target, const ConnectTarget& tunnel);

/// Checks a complete client request (not CONNECT). nullopt means acceptable.
std::optional<Refused> check_request(const Request& req, const Config& config);

/// Whether the client wants its connection kept, honouring Proxy-Connection
/// (which browsers send to proxies) as well as Connection.
bool client_wants_keep_alive(const Request& req);

/// True for conditional requests (ROPE's "validation" requests).
bool is_validation(const Request& req);

/// The request as the Collector and the proxies get it: hop-by-hop headers
/// and Expect removed, Via appended, HTTP/1.1, persistence mirrored from the client.
Request make_upstream_request(const Request& client_request, const std::string& via_name, bool keep_alive);

/// Marks the upstream copy with this Multiplier's request tag (X-SPE-Request),
/// first removing any X-SPE-Request, X-SPE-Fetch, X-SPE-Validated,
/// X-SPE-Reply-To, X-SPE-Parent or X-SPE-Scheme the client sent: a client must not choose another request's
/// tag nor the Collector's stamps. Not used in --dummy mode, where these
/// headers pass untouched.
void set_request_tag(Request& upstream, std::string_view tag);

/// The tag of the upstream request `id` of the process whose random part is `process`.
std::string request_tag(std::string_view process, std::uint64_t id);

/// 16 hex digits, random per Multiplier process: the first part of its request tags.
std::string random_process_tag();

/// The first part of every request tag of this process: `prefix.` (a --tag-prefix, so that a Collector shared by
/// several Multipliers can route each proxy's unsafe copy to the replay port of the one that sent it) before the
/// random part, which keeps the tags of a restarted Multiplier apart from its earlier ones.
std::string process_tag(std::string_view prefix);

/// The authority of an absolute URL as written ("host:port", userinfo dropped); empty if none.
std::string_view authority_text(std::string_view target);

/// host and port of an absolute-form http:// target; nullopt if it is not one.
std::optional<Endpoint> http_authority(std::string_view target);

}  // namespace spe
