// What the Multiplier measures about one reply (from the Collector or from a
// proxy under test), and the record it logs per client request.
#pragma once

#include "core/cache_headers.hpp"
#include "core/cache_verdict.hpp"
#include "core/compared_headers.hpp"
#include "core/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spe {

/// An interim (1xx) response that came before the final one (RFC 9110 15.2).
struct Interim {
    unsigned status = 0;
    std::int64_t at_us = 0;  // from the start of the attempt, as ttfb_us
};

/// One reply as seen by the Multiplier. Times are microseconds from the start
/// of the attempt that got the reply (before connecting); connect_us is 0 for
/// a reused connection.
struct Measure {
    std::optional<unsigned> status;
    unsigned version = 0;  // 10 or 11
    std::uint64_t header_bytes = 0;
    std::uint64_t bytes = 0;  // decoded body bytes
    std::optional<std::string> md5;
    std::optional<std::int64_t> connect_us;
    std::optional<std::int64_t> ttfb_us;
    std::optional<std::int64_t> total_us;
    LegError error = LegError::none;
    std::string error_detail;
    ComparedHeaders headers;  // the compared subset, for validation
    // The Collector's X-SPE-Fetch stamp: which origin fetch the reply came from. Never compared.
    std::optional<std::string> fetch;
    // The fields the cache-rule judge reads (filled only when it is on), and its verdict.
    CacheHeaders cache_headers;
    std::optional<CacheVerdict> cache;
    // The request went out a second time on a fresh connection after the kept-alive one
    // failed (GET/HEAD only); the times are those of the second attempt.
    bool retried = false;
    // The replay port's reason (X-SPE-Replay-Refused) when it refused this proxy's copy of an unsafe
    // request; the leg is then recorded REPLAY_REFUSED whatever else happened to it.
    std::string replay_refusal;
    // The interim responses before the final one (101 is an upgrade, never here), in order.
    // Interims and no status: the leg ended (error) after its last interim, without a final reply.
    std::vector<Interim> interim;
    // Filled only when mismatch capture is on.
    std::string raw_header;
    std::string body_head;
};

enum class ResultClass {
    ok,
    status_code_mismatch,
    header_mismatch,
    body_mismatch,
    // The reply came from another origin fetch than the Collector's, matches that fetch as a client first got
    // it, and differs from the Collector's reply only by what differs between the two fetches.
    other_fetch,
    no_response,
    protocol_error,
    replay_refused,  // the proxy's copy of an unsafe request did not match the client's: kept from the origin
    not_sent,        // an unsafe request the proxies did not get (no replay port): nothing to compare
};

/// The name the log gives a result class.
constexpr std::string_view to_string(ResultClass r) {
    switch (r) {
        case ResultClass::ok:
            return "OK";
        case ResultClass::status_code_mismatch:
            return "STATUS_CODE_MISMATCH";
        case ResultClass::header_mismatch:
            return "HEADER_MISMATCH";
        case ResultClass::body_mismatch:
            return "BODY_MISMATCH";
        case ResultClass::other_fetch:
            return "OTHER_FETCH";
        case ResultClass::no_response:
            return "NO_RESPONSE";
        case ResultClass::protocol_error:
            return "PROTOCOL_ERROR";
        case ResultClass::replay_refused:
            return "REPLAY_REFUSED";
        case ResultClass::not_sent:
            return "NOT_SENT";
    }
    return "PROTOCOL_ERROR";
}

struct ProxyResult {
    std::string name;
    Measure measure;
    ResultClass result = ResultClass::no_response;
    std::vector<std::string> mismatched_headers;
    std::size_t position = 0;  // place in this request's (rotated) fan-out order, from 0
    double sent_at = 0;        // unix seconds when the leg began (after its wait for the proxy's turn)
    // Microseconds the leg waited inside SPE before it was sent: the fan-out's executor and this proxy's
    // turn (it answers a client connection's requests one at a time, in order); none of the
    // measure's times include it. Unset when the leg never got as far as its turn (withheld, no fan-out).
    std::optional<std::int64_t> queued_us = std::nullopt;
    // The client's earlier requests, on its other connections, whose reply it had whole before this request
    // arrived and which this proxy had not answered yet when the leg was ready: it waited for them (record
    // ids; queued_us includes the wait). Empty when it waited for none.
    std::vector<std::uint64_t> waited_for = {};
    // The client's earlier requests this leg came after that the proxy was still answering when it was sent:
    // a leg ahead of it held the turn past --order-wait (or --max-queued-legs), so the order was given up
    // and this leg went on another connection (record ids, ascending). Empty: sent in the client's order.
    std::vector<std::uint64_t> overtook = {};
    // Whether one of them may have changed what the proxy's cache gives this request (the same URL, or an
    // unsafe request): the judge then does not hold the proxy to what those requests left in its cache.
    bool overtook_related = false;
};

/// One client request and everything measured for it: one log record.
struct RequestRecord {
    double ts = 0;  // unix seconds when the request was received
    std::uint64_t id = 0;
    std::string client;
    // Microseconds the session held the client back before it read this request: SPE's own measuring (the
    // fan-out executor) was more than --max-fanout-backlog of the connection's fan-outs behind. Never a
    // proxy's doing. Unset: no hold.
    std::optional<std::int64_t> client_held_us;
    std::string method;
    std::string url;
    std::string version;       // "HTTP/1.1"
    bool validation = false;   // conditional request (ROPE's "validation")
    bool intercepted = false;  // read inside an intercepted TLS tunnel (the url is https)
    Measure collector;
    unsigned client_status = 0;
    std::string note;  // e.g. why there was no fan-out
    std::string tag;   // X-SPE-Request of the upstream copy; empty: no upstream request or no tag
    // The request's header fields caches decide by (filled by the cache-rule judge): to replay it.
    std::vector<std::pair<std::string, std::string>> request_headers;
    std::vector<ProxyResult> proxies;
};

}  // namespace spe
