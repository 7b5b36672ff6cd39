#include "session/proxy_leg.hpp"

#include "http/digest_body.hpp"
#include "http/reply_header.hpp"

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <limits>
#include <optional>

namespace spe {
namespace {

using ReplyParser = http::response_parser<DigestBody>;

void configure(ReplyParser& p, bool head_request, const ProxyLegLimits& limits) {
    p.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    p.body_limit(limits.body_cap.value_or(std::numeric_limits<std::uint64_t>::max()));
    p.skip(head_request);
    p.get().body().head_limit = limits.capture_body_bytes;
}

void fail(Measure& m, UpstreamConnection& conn, LegError e, std::string detail) {
    m.error = e;
    m.error_detail = std::move(detail);
    conn.close();
}

}  // namespace

awaitable<Measure> run_proxy_leg(UpstreamConnection& conn, const WireRequest& req, bool head_request,
                                 ProxyLegLimits limits, const HeaderPolicy& policy) {
    Measure m;
    const auto t0 = Clock::now();
    const auto deadline = t0 + limits.timeout;
    if (auto e = co_await conn.send(req, t0, deadline, m); e != LegError::none) {
        m.error = e;
        m.total_us = micros_since(conn.started());
        co_return m;
    }

    // Interim (1xx) replies are recorded (status, time) and the final reply is
    // what gets compared; each 1xx is a whole message to Beast, so the next
    // one, or the final reply, is read with a fresh parser, under the same deadline.
    std::optional<ReplyParser> parser;
    error_code ec;
    for (;;) {
        parser.emplace();
        configure(*parser, head_request, limits);
        m.header_bytes += parse_buffered(*parser, conn.buffer(), ec);
        if (!ec && !parser->is_header_done()) {
            conn.stream().expires_at(deadline);
            m.header_bytes += co_await http::async_read_header(conn.stream(), conn.buffer(), *parser, with_ec(ec));
        }
        const unsigned status = parser->is_header_done() ? parser->get().result_int() : 0;
        if (ec || status < 100 || status >= 200 || status == 101) break;
        note_interim(m, status, conn.started());
    }
    // Everything the header tells is kept as soon as it is parsed: a leg that
    // fails in the body is still compared on its status and headers.
    if (parser->is_header_done()) take_header(m, parser->get().base(), policy, limits.cache_fields);
    if (!ec && !parser->is_done()) {
        parser->eager(true);
        parse_buffered(*parser, conn.buffer(), ec);
    }
    if (!ec && !parser->is_done()) {
        conn.stream().expires_at(deadline);
        co_await http::async_read(conn.stream(), conn.buffer(), *parser, with_ec(ec));
    }
    auto& body = parser->get().body();
    m.bytes = body.digest.bytes();
    m.total_us = micros_since(conn.started());
    if (limits.capture_body_bytes > 0) {
        if (parser->is_header_done()) m.raw_header = header_text(parser->get().base());
        m.body_head = std::move(body.head);
    }
    if (ec) {
        const bool got_header = parser->is_header_done();
        fail(m, conn, classify(ec, got_header),
             (got_header ? "reading the body after " + std::to_string(m.bytes) + " bytes: "
                         : std::string("reading the reply header: ")) +
                 ec.message());
        co_return m;
    }
    m.md5 = body.digest.hex_final();
    conn.end_reply(parser->get().keep_alive());
    if (conn.bytes_after_reply()) {
        m.error = LegError::extra_data;
        m.error_detail = "bytes followed the end of the reply";
    }
    co_return m;
}

}  // namespace spe
