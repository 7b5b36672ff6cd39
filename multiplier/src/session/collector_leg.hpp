// The request to the Collector and its reply streamed to the client as it
// arrives (header first, body through one fixed buffer), digested on the way.
// The client is answered here; the measure becomes the fan-out's reference.
#pragma once

#include "context/server_context.hpp"
#include "core/measurement.hpp"
#include "http/expected_body_digest.hpp"
#include "http/header_policy.hpp"
#include "io/client_stream.hpp"
#include "io/upstream_connection.hpp"
#include "replay/replay_store.hpp"

#include <memory>

namespace spe {

/// How the reply must be framed for this client.
struct ClientSide {
    ClientStream& stream;
    bool head_request = false;
    bool http11 = true;      // the client spoke HTTP/1.1 (may get chunked)
    bool keep_alive = true;  // the client wants the connection kept
};

struct RelayOutcome {
    Measure measure;               // the Collector's reply as the client got it
    bool client_answered = false;  // a reply header was sent to the client
    bool client_failed = false;    // writing to the client failed (it went away)
    bool keep_alive = true;        // the client connection may serve another request
    // The whole body and its MD5, when asked for, whole and within the budget (--reference-bytes): the
    // proxies' bodies are compared with it before they are hashed (http/expected_body_digest.hpp).
    std::shared_ptr<const ReferenceBody> body;
};

class CollectorLeg {
public:
    CollectorLeg(const asio::any_io_executor& strand, ServerContext& ctx);

    /// `replay`, when set, keeps the reply for the proxies' copies of an unsafe request; `keep_body`:
    /// the outcome keeps the body (RelayOutcome::body) for the proxy legs to compare with.
    awaitable<RelayOutcome> relay(const WireRequest& req, ClientSide client, ReplayRecording* replay = nullptr,
                                  bool keep_body = false);
    void close() { conn_.close(); }

private:
    struct RelayState;  // what the steps of one relay share (collector_leg.cpp)

    /// Reads the Collector's reply up to its final header, relaying each interim (1xx) reply to the client;
    /// false: the relay ended there (the error or the client's failure is in the outcome).
    awaitable<bool> read_final_header(RelayState& state);
    /// Relays an interim (1xx) reply to an HTTP/1.1 client; false: writing to the client failed.
    awaitable<bool> relay_interim(const http::response_header<>& interim, ClientSide& client);
    /// Records the final header and makes the client's copy of it (moved from the parser's).
    void take_final_header(RelayState& state);
    /// Streams the body to the client as it arrives (the header leaves with its first bytes), kept on the way.
    awaitable<void> stream_body(RelayState& state);
    /// Reads what the Collector has already sent of the body into `chunk`, up to `size` bytes; the bytes read.
    awaitable<std::size_t> fill_chunk(RelayState& state, char* chunk, std::size_t size, error_code& ec);
    /// The measure's end: the MD5 and the kept body of a whole reply, the Collector connection kept or closed.
    void finish(RelayState& state, bool keep_body);

    ServerContext& ctx_;
    UpstreamConnection conn_;
};

/// Headers of a reply going to the client: hop-by-hop removed, Via appended,
/// framing and persistence set for this client.
void prepare_client_reply(http::response_header<>& reply, const std::string& via_name, bool has_body, bool length_known,
                          ClientSide& client);

}  // namespace spe
