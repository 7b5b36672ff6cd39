// Closed set of the ways a leg (Collector or proxy under test) can fail, and
// the one place that maps them to log result classes (the client's answer when
// the Collector leg fails: core/refusals.hpp).
#pragma once

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace spe {

/// Why a leg did not deliver a complete reply.
enum class LegError {
    none,
    refused,           // connect refused or no route
    timeout,           // the leg's deadline passed
    reset,             // connection reset by the peer
    closed,            // peer closed before a reply header
    truncated,         // peer closed inside the body (short Content-Length, bad chunking at EOF)
    bad_header,        // the reply header could not be parsed (garbage, bad status line)
    header_too_large,  // the reply header exceeded --max-header-bytes
    body_too_large,    // the body exceeded the length cap
    bad_body,          // the body framing was invalid (bad chunk size ...)
    aborted,           // the Multiplier stopped the leg (shutdown)
    busy,              // no connection slot left for this proxy
    extra_data,        // bytes followed the end of the reply (e.g. a body on a HEAD reply)
    not_sent,          // an unsafe request withheld from the proxies (--unsafe-requests withhold)
    replay_refused,    // the replay port refused this proxy's copy of an unsafe request (X-SPE-Replay-Refused)
};

std::string_view to_string(LegError e);

/// True when the error means "no usable reply" in the log's terms (NO_RESPONSE);
/// false for the PROTOCOL_ERROR kinds.
bool is_no_response(LegError e);

/// Classifies a Boost/Beast error seen while running a leg. `got_header` tells
/// whether the reply header had been parsed already (EOF then means truncation).
LegError classify(const boost::system::error_code& ec, bool got_header);

}  // namespace spe
