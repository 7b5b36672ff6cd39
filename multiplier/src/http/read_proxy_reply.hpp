// How a proxy leg reads and measures a reply once its first bytes are
// buffered: interim (1xx) replies recorded, the final header taken, the body
// read through a digesting body to its end, the outcome classified. A template
// on the stream so that the fuzz target (tests/fuzz/fuzz_proxy_reply.cpp) runs
// this very code over a stream that hands out its input in pieces; the leg
// runs it over its connection's TimedStream (fanout/proxy_leg.cpp).
#pragma once

#include "core/errors.hpp"
#include "core/measurement.hpp"
#include "core/steady_clock.hpp"
#include "http/digest_body.hpp"
#include "http/header_policy.hpp"
#include "http/parse_buffered.hpp"
#include "http/proxy_reply_parser.hpp"
#include "http/read_buffer.hpp"
#include "http/reply_header.hpp"

#include <boost/beast/http/read.hpp>
#include <boost/optional.hpp>

#include <limits>
#include <optional>
#include <string>

namespace spe {

struct ProxyLegLimits {
    std::chrono::milliseconds timeout;      // whole leg, connect to last byte
    std::optional<std::uint64_t> body_cap;  // bytes past this end the read
    std::size_t max_header_bytes = 64 * 1024;
    std::size_t capture_body_bytes = 0;  // 0: no capture
    bool cache_fields = false;           // take the fields the cache-rule judge reads
    // The body the reply is expected to have (the Collector's, as the client got it): compared, not
    // hashed, while equal. Null: every byte hashed. Outlives the leg (its fan-out holds it).
    const ReferenceBody* reference_body = nullptr;
    // body_cap is the reference's length (sequential mode), which says nothing of a reply of another status
    // (a 200 where the Collector answered 304): when set, it cuts only a reply of this status (the
    // reference's); one of any other is read whole, up to other_status_cap (--max-proxy-body).
    std::optional<unsigned> capped_status = std::nullopt;
    std::uint64_t other_status_cap = std::numeric_limits<std::uint64_t>::max();
};

/// How the reply read ended: with an error (m.error says which), or whole, and then
/// whether the reply lets its connection carry another request.
struct ReplyEnd {
    bool whole = false;
    bool keep_alive = false;
};

/// What the body sink of one reply is told before its first byte.
inline void configure_body_sink(DigestBody::value_type& body, const ProxyLegLimits& limits) {
    body.head_limit = limits.capture_body_bytes;
    body.digest.expect(limits.reference_body);
}

inline void configure_reply_parser(ProxyReplyParser& p, bool head_request, const ProxyLegLimits& limits) {
    p.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    p.body_limit(limits.body_cap.value_or(std::numeric_limits<std::uint64_t>::max()));
    if (limits.capped_status) p.other_status_body_limit(*limits.capped_status, limits.other_status_cap);
    p.skip(head_request);
    configure_body_sink(p.body(), limits);
}

/// Reads the reply `buffer` holds the start of from `stream` (each read under
/// `deadline`, set with stream.expires_at) and measures it into `m`: status,
/// headers, interim replies, bytes, MD5 when whole, the capture prefix, the
/// total time from `started`; on failure m.error and m.error_detail. Bytes
/// after the reply stay in `buffer` (the caller's protocol error to find).
template <class Stream>
awaitable<ReplyEnd> read_proxy_reply(Stream& stream, ReadBuffer& buffer, Measure& m, bool head_request,
                                     ProxyLegLimits limits, const HeaderPolicy& policy, Clock::time_point started,
                                     Clock::time_point deadline) {
    // Interim (1xx) replies are recorded (status, time) and the final reply is
    // what gets compared; each 1xx is a whole message to Beast, so the next
    // one, or the final reply, is read with a fresh parser, under the same deadline.
    // boost::optional, not std::: GCC 12's std::optional zeroes all its storage when made, and
    // the parser holds some 3.5 KiB (room for a header's text): ~450 instructions per leg.
    boost::optional<ProxyReplyParser> parser;
    error_code ec;
    for (;;) {
        parser.emplace();
        configure_reply_parser(*parser, head_request, limits);
        m.header_bytes += parse_buffered(*parser, buffer, ec);
        if (!ec && !parser->is_header_done()) {
            stream.expires_at(deadline);
            m.header_bytes += co_await http::async_read_header(stream, buffer, *parser, with_ec(ec));
        }
        const unsigned status = parser->is_header_done() ? parser->status() : 0;
        if (!ec && parser->is_header_done() && !status_code_valid(status)) ec = http::error::bad_status;
        if (ec || status >= 200 || status == 101) break;
        note_interim(m, status, started);
    }
    // Everything the header tells is kept as soon as it is parsed: a leg that
    // fails in the body is still compared on its status and headers. A header
    // with a malformed status tells nothing.
    const bool got_header = parser->is_header_done() && ec != http::error::bad_status;
    if (got_header) take_header(m, parser->status(), parser->version(), parser->fields(), policy, limits.cache_fields);
    if (!ec && !parser->is_done()) {
        parser->eager(true);
        parse_buffered(*parser, buffer, ec);
    }
    if (!ec && !parser->is_done()) {
        stream.expires_at(deadline);
        co_await http::async_read(stream, buffer, *parser, with_ec(ec));
    }
    auto& body = parser->body();
    m.bytes = body.digest.bytes();
    m.total_us = micros_since(started);
    if (limits.capture_body_bytes > 0) {
        if (got_header)
            m.raw_header = header_text(parser->version(), parser->status(), parser->reason(), parser->fields());
        m.body_head = std::move(body.head);
    }
    if (ec) {
        m.error = classify(ec, got_header);
        m.error_detail = (got_header ? "reading the body after " + std::to_string(m.bytes) + " bytes: "
                                     : std::string("reading the reply header: ")) +
                         ec.message();
        co_return ReplyEnd{};
    }
    m.md5 = body.digest.hex_final();
    co_return ReplyEnd{true, parser->header_keep_alive()};
}

}  // namespace spe
