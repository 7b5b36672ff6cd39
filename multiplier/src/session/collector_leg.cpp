#include "session/collector_leg.hpp"

#include "context/reference_budget.hpp"
#include "http/reply_header.hpp"

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

/// What the steps of one relay share: the client, the outcome being filled, the parser of the Collector's
/// reply (a fresh one per interim reply: each is a whole header-only message to Beast) and, from the final
/// header on, the client's copy of it and the body kept for the proxies.
struct CollectorLeg::RelayState {
    RelayState(ClientSide& client_side, ReplayRecording* recording, bool capturing)
        : client(client_side), replay(recording), capture(capturing) {}

    ClientSide& client;
    ReplayRecording* replay;
    bool capture;  // --capture-dir: the header and the first body bytes are kept for a mismatch capture
    RelayOutcome out;
    std::optional<RelayParser> parser;
    ClientReply reply;
    bool has_body = false;
    bool upstream_keep_alive = false;
    std::optional<KeptBody> body;

    /// The relay ends early: the leg's time taken, the Collector connection closed (its reply is unfinished).
    void stop(UpstreamConnection& conn) {
        out.measure.total_us = micros_since(conn.started());
        conn.close();
    }
};

awaitable<RelayOutcome> CollectorLeg::relay(const WireRequest& req, ClientSide client, ReplayRecording* replay,
                                            bool keep_body) {
    RelayState state(client, replay, !ctx_.config().capture_dir.empty());
    Measure& m = state.out.measure;
    const auto t0 = Clock::now();
    if (auto e = co_await conn_.send(req, t0, t0 + ctx_.config().client_timeout, m); e != LegError::none) {
        m.error = e;
        m.total_us = micros_since(conn_.started());
        co_return std::move(state.out);
    }
    if (!co_await read_final_header(state)) co_return std::move(state.out);
    take_final_header(state);
    co_await stream_body(state);
    finish(state, keep_body);
    co_return std::move(state.out);
}

awaitable<bool> CollectorLeg::read_final_header(RelayState& state) {
    const auto& cfg = ctx_.config();
    Measure& m = state.out.measure;
    error_code ec;
    for (;;) {
        auto& parser = state.parser.emplace();
        parser.header_limit(static_cast<std::uint32_t>(cfg.max_header_bytes));
        parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // streamed, never held
        parser.skip(state.client.head_request);
        m.header_bytes += parse_buffered(parser, conn_.buffer(), ec);
        if (!ec && !parser.is_header_done()) {
            conn_.stream().expires_after(cfg.client_timeout);
            m.header_bytes += co_await http::async_read_header(conn_.stream(), conn_.buffer(), parser, with_ec(ec));
        }
        if (!ec && !status_code_valid(parser.get().result_int())) ec = http::error::bad_status;
        if (ec) {
            m.error = classify(ec, false);
            m.error_detail = "reading the Collector's reply header: " + ec.message();
            state.stop(conn_);
            co_return false;
        }
        const unsigned status = parser.get().result_int();
        if (status >= 200 || status == 101) co_return true;
        note_interim(m, status, conn_.started());
        if (!co_await relay_interim(parser.get().base(), state.client)) {
            state.out.client_failed = true;
            state.out.keep_alive = false;
            state.stop(conn_);
            co_return false;
        }
    }
}

void CollectorLeg::take_final_header(RelayState& state) {
    const auto& cfg = ctx_.config();
    Measure& m = state.out.measure;
    auto& parser = *state.parser;
    auto& upstream = parser.get();
    take_header(m, upstream.base(), ctx_.policy(), cfg.cache_judge);
    if (state.capture) m.raw_header = header_text(upstream.base());
    if (state.replay) state.replay->header(upstream.base());
    state.has_body = !state.client.head_request && !no_body_status(*m.status);
    state.upstream_keep_alive = upstream.keep_alive();

    // Moved, not copied: the parser reads the body on without its header fields (its framing is its own).
    state.reply.base() = std::move(upstream.base());
    // The fetch stamp is for the record, not for the client (a --dummy proxy
    // under test passes it on untouched: its client is a Multiplier).
    if (!cfg.dummy && !cfg.client_fetch_stamp) erase_collector_stamps(state.reply.base());
    erase_withheld_fields(state.reply.base());
    prepare_client_reply(state.reply.base(), cfg.via_name, state.has_body, parser.content_length().has_value(),
                         state.client);
    state.out.keep_alive = state.client.keep_alive;

    // Kept whether the proxies compare with it or not: a kept body is hashed after the client has it.
    std::optional<std::uint64_t> length;
    if (!state.has_body)
        length = 0;
    else if (const auto declared = parser.content_length())
        length = *declared;
    state.body.emplace(ctx_.reference_budget(), length);
}

awaitable<void> CollectorLeg::stream_body(RelayState& state) {
    const auto& cfg = ctx_.config();
    Measure& m = state.out.measure;
    auto& parser = *state.parser;
    auto& body = *state.body;
    http::response_serializer<http::buffer_body> serializer(state.reply);

    // The relay buffer lives while this reply does (an idle connection holds
    // none), is not zeroed (only the pages bodies touch become resident), and
    // is no larger than a body of known length needs.
    const std::size_t chunk_bytes =
        relay_buffer_bytes(state.has_body ? parser.content_length() : boost::optional<std::uint64_t>(0));
    const auto chunk_holder = std::make_unique_for_overwrite<char[]>(chunk_bytes);
    char* const chunk = chunk_holder.get();

    // The header leaves with the first body bytes (one write).
    for (;;) {
        error_code ec;
        const std::size_t filled = co_await fill_chunk(state, chunk, chunk_bytes, ec);
        if (ec) {
            m.error = classify(ec, true);
            m.error_detail = "reading the Collector's body after " + std::to_string(body.bytes() + filled) +
                             " bytes: " + ec.message();
            co_return;
        }
        // No bytes means "end of body": a null pointer, as Beast's buffer_body
        // would otherwise emit an empty chunk, which reads as a premature last-chunk.
        state.reply.body().data = filled ? chunk : nullptr;
        state.reply.body().size = filled;
        state.reply.body().more = !parser.is_done();
        state.out.client_answered = true;
        state.client.stream.expires_after(cfg.client_timeout);
        co_await http::async_write(state.client.stream, serializer, with_ec(ec));
        if (ec == http::error::need_buffer) ec = {};
        body.append(chunk, filled);  // after it is sent: the client does not wait for a copy or an MD5
        if (state.replay) state.replay->body(chunk, filled);
        if (state.capture && m.body_head.size() < cfg.capture_body_bytes)
            m.body_head.append(chunk, std::min(filled, cfg.capture_body_bytes - m.body_head.size()));
        if (ec) {
            state.out.client_failed = true;
            co_return;
        }
        if (parser.is_done()) co_return;
    }
}

awaitable<std::size_t> CollectorLeg::fill_chunk(RelayState& state, char* chunk, std::size_t size, error_code& ec) {
    // Each read takes what the Collector has already sent, up to one buffer, so
    // a body that arrives in small pieces still goes out in few writes, without waiting.
    auto& parser = *state.parser;
    auto& into = parser.get().body();
    std::size_t filled = 0;
    while (!parser.is_done() && filled < size) {
        into.data = chunk + filled;
        into.size = size - filled;
        conn_.stream().expires_after(ctx_.config().client_timeout);
        co_await http::async_read_some(conn_.stream(), conn_.buffer(), parser, with_ec(ec));
        if (ec == http::error::need_buffer) ec = {};
        if (ec) co_return filled;
        filled = size - into.size;
        error_code ignored;
        if (filled > 0 && conn_.buffer().size() == 0 &&
            (!conn_.stream().last_read_filled_buffer() || conn_.stream().socket().available(ignored) == 0))
            co_return filled;
    }
    co_return filled;
}

void CollectorLeg::finish(RelayState& state, bool keep_body) {
    Measure& m = state.out.measure;
    m.bytes = state.body->bytes();
    m.total_us = micros_since(conn_.started());
    if (m.error == LegError::none && !state.out.client_failed) {
        m.md5 = state.body->md5();
        if (keep_body) state.out.body = state.body->finish(*m.md5);
        conn_.end_reply(state.upstream_keep_alive);
    } else {
        // A reply cut short can't be completed for the client: closing is how it learns.
        conn_.close();
        state.out.keep_alive = false;
    }
}

}  // namespace spe
