// The proxy reply parser (http/proxy_reply_parser.hpp) beside Beast's
// response_parser, which the proxy leg read its replies with before it: one
// reply, handed over in the same pieces and read the same way (as
// session/proxy_reply.hpp reads it) by each, and the first part in which the
// two outcomes differ. For tests/unit/test_proxy_reply_parser.cpp (a corpus) and
// tests/fuzz/fuzz_proxy_reply.cpp (whatever the fuzzer makes).
#pragma once

#include "http/read_proxy_reply.hpp"
#include "http/reply_header.hpp"

#include <boost/beast/http/parser.hpp>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spe::test {

namespace http = boost::beast::http;
using BeastParser = http::response_parser<DigestBody>;

// What each parser tells, asked its own way.
inline void configure(BeastParser& p, bool head, const ProxyLegLimits& limits) {
    p.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    p.body_limit(limits.body_cap.value_or(std::numeric_limits<std::uint64_t>::max()));
    p.skip(head);
    configure_body_sink(p.get().body(), limits);
}
inline void configure(ProxyReplyParser& p, bool head, const ProxyLegLimits& limits) {
    configure_reply_parser(p, head, limits);
}
inline unsigned status_of(const BeastParser& p) {
    return p.get().result_int();
}
inline unsigned status_of(const ProxyReplyParser& p) {
    return p.status();
}
inline DigestBody::value_type& body_of(BeastParser& p) {
    return p.get().body();
}
inline DigestBody::value_type& body_of(ProxyReplyParser& p) {
    return p.body();
}
inline void take(Measure& m, const BeastParser& p, const HeaderPolicy& policy) {
    take_header(m, p.get().base(), policy, true);
}
inline void take(Measure& m, const ProxyReplyParser& p, const HeaderPolicy& policy) {
    take_header(m, p.status(), p.version(), p.fields(), policy, true);
}
inline std::string text_of(const BeastParser& p) {
    return header_text(p.get().base());
}
inline std::string text_of(const ProxyReplyParser& p) {
    return header_text(p.version(), p.status(), p.reason(), p.fields());
}
inline bool keep_alive_of(const BeastParser& p) {
    return p.get().keep_alive();
}
inline bool keep_alive_of(const ProxyReplyParser& p) {
    return p.header_keep_alive();
}

struct Outcome {
    Measure m;
    std::vector<unsigned> interim;
    std::string ec;
    bool keep_alive = false;
    std::uint64_t consumed = 0;
};

/// Reads `reply`, handed over `piece` bytes at a time and then the end of the stream, as the
/// proxy leg does (session/proxy_reply.hpp): interim replies, the final header, the body.
template <class Parser>
Outcome parse_reply(std::string_view reply, std::size_t piece, bool head, const ProxyLegLimits& limits) {
    static const HeaderPolicy policy;
    Outcome out;
    ReadBuffer buffer;
    boost::system::error_code ec;
    // Parses on until the header (or the whole reply) is in, taking more input as Beast's reads do.
    const auto read = [&](Parser& p, bool whole) {
        for (;;) {
            out.consumed += parse_buffered(p, buffer, ec);
            if (ec || (whole ? p.is_done() : p.is_header_done())) return;
            if (reply.empty()) {
                if (p.got_some())
                    p.put_eof(ec);
                else
                    ec = http::error::end_of_stream;
                return;
            }
            const auto n = std::min(piece, reply.size());
            buffer.commit(boost::asio::buffer_copy(buffer.prepare(n), boost::asio::buffer(reply.data(), n)));
            reply.remove_prefix(n);
        }
    };
    std::optional<Parser> p;
    for (;;) {
        p.emplace();
        configure(*p, head, limits);
        read(*p, false);
        const unsigned status = p->is_header_done() ? status_of(*p) : 0;
        if (!ec && p->is_header_done() && !status_code_valid(status)) ec = http::error::bad_status;
        if (ec || status >= 200 || status == 101) break;
        out.interim.push_back(status);
    }
    const bool got_header = p->is_header_done() && ec != http::error::bad_status;
    if (got_header) take(out.m, *p, policy);
    if (!ec && !p->is_done()) {
        p->eager(true);
        read(*p, true);
    }
    auto& body = body_of(*p);
    out.m.bytes = body.digest.bytes();
    out.m.body_head = body.head;
    if (got_header) out.m.raw_header = text_of(*p);
    out.m.error = classify(ec, got_header);
    out.ec = ec.message();
    if (!ec) {
        out.m.md5 = body.digest.hex_final();
        out.keep_alive = keep_alive_of(*p);
    }
    return out;
}

/// The first part in which two outcomes differ ("" if none): what a test names when they differ.
inline std::string first_difference(const Outcome& beast, const Outcome& ours) {
    const auto& b = beast.m;
    const auto& o = ours.m;
    if (ours.ec != beast.ec) return "error code: " + beast.ec + " / " + ours.ec;
    if (o.error != b.error) return "error";
    if (ours.consumed != beast.consumed) return "bytes consumed";
    if (ours.keep_alive != beast.keep_alive) return "keep-alive";
    if (ours.interim != beast.interim) return "interim replies";
    if (o.status != b.status) return "status";
    if (o.version != b.version) return "version";
    if (o.headers != b.headers) return "compared headers";
    if (o.fetch != b.fetch) return "fetch stamp";
    if (o.replay_refusal != b.replay_refusal) return "replay refusal";
    for (std::size_t f = 0; f < static_cast<std::size_t>(CacheField::count); ++f)
        if (o.cache_headers.get(CacheField(f)) != b.cache_headers.get(CacheField(f)))
            return "cache field " + std::to_string(f);
    if (o.cache_headers.field_names != b.cache_headers.field_names) return "field names";
    if (o.cache_headers.set_cookie != b.cache_headers.set_cookie) return "set-cookie";
    if (o.raw_header != b.raw_header) return "raw header:\n" + b.raw_header + "\n/\n" + o.raw_header;
    if (o.bytes != b.bytes) return "body bytes";
    if (o.md5 != b.md5) return "md5";
    if (o.body_head != b.body_head) return "body head";
    return "";
}

}  // namespace spe::test
