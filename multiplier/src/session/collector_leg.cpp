#include "session/collector_leg.hpp"

#include "http/reply_header.hpp"
#include "session/reference_budget.hpp"

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <limits>
#include <optional>

namespace spe {
namespace {

using RelayParser = http::response_parser<http::buffer_body>;
using ClientReply = http::response<http::buffer_body>;
constexpr std::size_t kChunkBytes = 64 * 1024;

bool no_body_status(unsigned status) {
    return status < 200 || status == 204 || status == 304;
}

/// A body of known length gets a buffer of its size (at least 1 byte, at most
/// kChunkBytes); a chunked or close-delimited one the whole kChunkBytes.
std::size_t relay_buffer_bytes(boost::optional<std::uint64_t> content_length) {
    if (!content_length) return kChunkBytes;
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(*content_length, 1, kChunkBytes));
}

}  // namespace

void prepare_client_reply(http::response_header<>& reply, const std::string& via_name, bool has_body, bool length_known,
                          ClientSide& client) {
    const auto received = reply.version();
    strip_hop_by_hop(reply);
    append_via(reply, received, via_name);
    reply.version(11);
    if (has_body && !length_known) {
        // Length unknown (upstream chunked or close-delimited): re-chunk for
        // an HTTP/1.1 client; an HTTP/1.0 client reads until we close.
        if (client.http11)
            reply.set(http::field::transfer_encoding, "chunked");
        else
            client.keep_alive = false;
    }
    if (!client.keep_alive)
        reply.set(http::field::connection, "close");
    else if (!client.http11)
        reply.set(http::field::connection, "keep-alive");
}

awaitable<bool> CollectorLeg::relay_interim(const http::response_header<>& interim, ClientSide& client) {
    // RFC 9110 15.2: a proxy forwards every 1xx it did not ask for itself, but
    // never to an HTTP/1.0 client. (The Multiplier sends no Expect upstream:
    // it answered 100-continue itself, so a 100 from upstream was not asked
    // for either; a second 100 is harmless to a client, which must parse any
    // number of 1xx before the final reply.)
    if (!client.http11) co_return true;
    http::response<http::empty_body> relayed;
    relayed.base() = interim;
    strip_hop_by_hop(relayed.base());
    append_via(relayed.base(), interim.version(), ctx_.config().via_name);
    relayed.version(11);
    error_code ec;
    client.stream.expires_after(ctx_.config().client_timeout);
    co_await http::async_write(client.stream, relayed, with_ec(ec));
    co_return !ec;
}

CollectorLeg::CollectorLeg(const asio::any_io_executor& strand, ServerContext& ctx)
    : ctx_(ctx), conn_(strand, ctx.collector(), read_buffer_limit(ctx.config())) {}

awaitable<RelayOutcome> CollectorLeg::relay(const WireRequest& req, ClientSide client, ReplayRecording* replay,
                                            bool keep_body) {
    RelayOutcome out;
    Measure& m = out.measure;
    const auto& cfg = ctx_.config();
    const bool capture = !cfg.capture_dir.empty();
    const auto t0 = Clock::now();
    if (auto e = co_await conn_.send(req, t0, t0 + cfg.client_timeout, m); e != LegError::none) {
        m.error = e;
        m.total_us = micros_since(conn_.started());
        co_return out;
    }

    error_code ec;
    std::optional<RelayParser> parser;
    // Each interim (1xx) reply is a complete header-only message to Beast: the
    // next one, or the final reply, needs a fresh parser.
    for (;;) {
        parser.emplace();
        parser->header_limit(static_cast<std::uint32_t>(cfg.max_header_bytes));
        parser->body_limit(std::numeric_limits<std::uint64_t>::max());  // streamed, never held
        parser->skip(client.head_request);
        m.header_bytes += parse_buffered(*parser, conn_.buffer(), ec);
        if (!ec && !parser->is_header_done()) {
            conn_.stream().expires_after(cfg.client_timeout);
            m.header_bytes += co_await http::async_read_header(conn_.stream(), conn_.buffer(), *parser, with_ec(ec));
        }
        if (!ec && !status_code_valid(parser->get().result_int())) ec = http::error::bad_status;
        if (ec) {
            m.error = classify(ec, false);
            m.error_detail = "reading the Collector's reply header: " + ec.message();
            m.total_us = micros_since(conn_.started());
            conn_.close();
            co_return out;
        }
        const unsigned status = parser->get().result_int();
        if (status >= 200 || status == 101) break;
        note_interim(m, status, conn_.started());
        if (!co_await relay_interim(parser->get().base(), client)) {
            out.client_failed = true;
            out.keep_alive = false;
            m.total_us = micros_since(conn_.started());
            conn_.close();
            co_return out;
        }
    }

    auto& upstream = parser->get();
    take_header(m, upstream.base(), ctx_.policy(), ctx_.config().cache_judge);
    if (capture) m.raw_header = header_text(upstream.base());
    if (replay) replay->header(upstream.base());
    const bool has_body = !client.head_request && !no_body_status(*m.status);
    const bool upstream_keep_alive = upstream.keep_alive();

    ClientReply reply;
    // Moved, not copied: the parser reads the body on without its header fields (its framing is its own).
    reply.base() = std::move(upstream.base());
    // The fetch stamp is for the record, not for the client (a --dummy proxy
    // under test passes it on untouched: its client is a Multiplier).
    if (!cfg.dummy && !cfg.client_fetch_stamp) erase_collector_stamps(reply.base());
    erase_withheld_fields(reply.base());
    prepare_client_reply(reply.base(), cfg.via_name, has_body, parser->content_length().has_value(), client);
    out.keep_alive = client.keep_alive;
    http::response_serializer<http::buffer_body> serializer(reply);

    // The relay buffer lives while this reply does (an idle connection holds
    // none), is not zeroed (only the pages bodies touch become resident), and
    // is no larger than a body of known length needs.
    const std::size_t chunk_bytes =
        relay_buffer_bytes(has_body ? parser->content_length() : boost::optional<std::uint64_t>(0));
    const auto chunk_holder = std::make_unique_for_overwrite<char[]>(chunk_bytes);
    char* const chunk = chunk_holder.get();

    // The header leaves with the first body bytes (one write); each read takes
    // what the Collector has already sent, up to one buffer, so a body that
    // arrives in small pieces still goes out in few writes, without waiting.
    // Kept whether the proxies compare with it or not: a kept body is hashed after the client has it.
    std::optional<std::uint64_t> length;
    if (!has_body)
        length = 0;
    else if (const auto declared = parser->content_length())
        length = *declared;
    KeptBody body(ctx_.reference_budget(), length);
    for (;;) {
        std::size_t filled = 0;
        while (!parser->is_done() && filled < chunk_bytes) {
            upstream.body().data = chunk + filled;
            upstream.body().size = chunk_bytes - filled;
            conn_.stream().expires_after(cfg.client_timeout);
            co_await http::async_read_some(conn_.stream(), conn_.buffer(), *parser, with_ec(ec));
            if (ec == http::error::need_buffer) ec = {};
            if (ec) break;
            filled = chunk_bytes - upstream.body().size;
            error_code ignored;
            if (filled > 0 && conn_.buffer().size() == 0 &&
                (!conn_.stream().last_read_filled_buffer() || conn_.stream().socket().available(ignored) == 0))
                break;
        }
        if (ec) {
            m.error = classify(ec, true);
            m.error_detail = "reading the Collector's body after " + std::to_string(body.bytes() + filled) +
                             " bytes: " + ec.message();
            break;
        }
        // No bytes means "end of body": a null pointer, as Beast's buffer_body
        // would otherwise emit an empty chunk, which reads as a premature last-chunk.
        reply.body().data = filled ? chunk : nullptr;
        reply.body().size = filled;
        reply.body().more = !parser->is_done();
        out.client_answered = true;
        client.stream.expires_after(cfg.client_timeout);
        co_await http::async_write(client.stream, serializer, with_ec(ec));
        if (ec == http::error::need_buffer) ec = {};
        body.append(chunk, filled);  // after it is sent: the client does not wait for a copy or an MD5
        if (replay) replay->body(chunk, filled);
        if (capture && m.body_head.size() < cfg.capture_body_bytes)
            m.body_head.append(chunk, std::min(filled, cfg.capture_body_bytes - m.body_head.size()));
        if (ec) {
            out.client_failed = true;
            break;
        }
        if (parser->is_done()) break;
    }
    m.bytes = body.bytes();
    m.total_us = micros_since(conn_.started());
    if (m.error == LegError::none && !out.client_failed) {
        m.md5 = body.md5();
        if (keep_body) out.body = body.finish(*m.md5);
        conn_.end_reply(upstream_keep_alive);
    } else {
        // A reply cut short can't be completed for the client: closing is how it learns.
        conn_.close();
        out.keep_alive = false;
    }
    co_return out;
}

}  // namespace spe
