// Every reply the Multiplier makes itself instead of relaying one (a request it
// refuses, an upstream it could not get an answer from), as one closed set,
// and the one place that maps each to its HTTP status (status_of). The reason,
// which says what exactly was wrong, is written where the refusal is decided;
// the client gets it (X-SPE-Error, the body) and the record keeps it (note).
#pragma once

#include "core/errors.hpp"

#include <string>

namespace spe {

enum class Refusal {
    // The client's request, refused before any upstream sees it.
    malformed_request,            // a request that does not parse
    request_timeout,              // the request did not arrive in time
    header_too_large,             // over --max-header-bytes
    body_too_large,               // over --max-request-body
    ambiguous_framing,            // Content-Length and Transfer-Encoding, or chunked not alone: possible smuggling
    unsupported_transfer_coding,  // a Transfer-Encoding other than chunked
    unsupported_version,          // neither HTTP/1.0 nor HTTP/1.1
    not_a_proxy_request,          // not absolute-form http:// (origin-form inside an intercepted tunnel)
    forwarding_loop,              // addressed to this Multiplier, or already through it (Via)
    bad_connect,                  // a CONNECT target not in authority-form, or a CONNECT inside a tunnel
    connect_port_not_allowed,     // a CONNECT to a port not in --connect-port
    client_not_allowed,           // the client's address is not in --allow (the listener's answer)
    // An upstream that gave no answer to relay.
    collector_timeout,         // the Collector leg's deadline passed
    collector_failed,          // the Collector could not be reached, or its reply broke or was unreadable
    collector_refused_tunnel,  // the Collector's own refusal of a CONNECT, passed on with its status
    upgrade_not_accepted,      // the Collector did not answer an Upgrade with 101
    replay_refused,            // the replay port's refusal of a proxy's copy of an unsafe request
};

/// The HTTP status of a refusal (collector_refused_tunnel: 0, the Collector's own status goes instead).
constexpr unsigned status_of(Refusal r) {
    switch (r) {
        case Refusal::malformed_request:
        case Refusal::ambiguous_framing:
        case Refusal::not_a_proxy_request:
        case Refusal::bad_connect:
            return 400;
        case Refusal::connect_port_not_allowed:
        case Refusal::client_not_allowed:
            return 403;
        case Refusal::request_timeout:
            return 408;
        case Refusal::body_too_large:
            return 413;
        case Refusal::header_too_large:
            return 431;
        case Refusal::unsupported_transfer_coding:
            return 501;
        case Refusal::collector_failed:
        case Refusal::upgrade_not_accepted:
        case Refusal::replay_refused:
            return 502;
        case Refusal::collector_timeout:
            return 504;
        case Refusal::unsupported_version:
            return 505;
        case Refusal::forwarding_loop:
            return 508;
        case Refusal::collector_refused_tunnel:
            return 0;
    }
    return 500;
}

/// A refusal and its reason.
struct Refused {
    Refusal refusal;
    std::string reason;
    /// With collector_refused_tunnel: the Collector's status, which the client gets as it came.
    unsigned collector_status = 0;

    unsigned status() const {
        return refusal == Refusal::collector_refused_tunnel ? collector_status : status_of(refusal);
    }
};

/// What the client is answered when the Collector leg failed with `e` and there is no reply to relay.
constexpr Refusal collector_failure(LegError e) {
    return e == LegError::timeout ? Refusal::collector_timeout : Refusal::collector_failed;
}

}  // namespace spe
