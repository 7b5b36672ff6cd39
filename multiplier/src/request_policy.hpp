// What the Multiplier accepts from a client and what it sends upstream:
// request checks (forward-proxy form, loops, smuggling) and the upstream copy.
#pragma once

#include "config.hpp"
#include "message_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

/// A request refused before any upstream sees it.
struct RequestProblem {
    unsigned status;
    std::string reason;
};

/// Checks a complete client request (not CONNECT). nullopt means acceptable.
std::optional<RequestProblem> check_request(const Request& req, const Config& config);

/// Whether the client wants its connection kept, honouring Proxy-Connection
/// (which browsers send to proxies) as well as Connection.
bool client_wants_keep_alive(const Request& req);

/// True for conditional requests (ROPE's "validation" requests).
bool is_validation(const Request& req);

/// The request as the Collector and the proxies get it: hop-by-hop headers
/// and Expect removed, Via appended, HTTP/1.1, persistence mirrored from the client.
Request make_upstream_request(const Request& client_request, const std::string& via_name, bool keep_alive);

/// Marks the upstream copy with this Multiplier's request tag (X-SPE-Request),
/// first removing any X-SPE-Request, X-SPE-Fetch, X-SPE-Validated or
/// X-SPE-Reply-To the client sent: a client must not choose another request's
/// tag nor the Collector's stamps. Not used in --dummy mode, where these
/// headers pass untouched.
void set_request_tag(Request& upstream, std::string_view tag);

/// The tag of the upstream request `id` of the process whose random part is `process`.
std::string request_tag(std::string_view process, std::uint64_t id);

/// 16 hex digits, random per Multiplier process: the first part of its request tags.
std::string random_process_tag();

/// The authority of an absolute URL as written ("host:port", userinfo dropped); empty if none.
std::string_view authority_text(std::string_view target);

/// host and port of an absolute-form http:// target; nullopt if it is not one.
std::optional<Endpoint> http_authority(std::string_view target);

}  // namespace spe
