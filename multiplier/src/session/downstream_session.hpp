// The client side of one connection: read requests (bounded), answer each in
// order from the Collector, hand it to the fan-out, then read the next one.
// Pipelined requests wait in the read buffer, so replies keep request order.
// Between requests only the socket and a small wait remain: no buffer, no parser.
// A CONNECT, once its target and port are accepted, is handed over with the
// connection: to a TunnelSession (tunnelled, not read), or with --intercept-tls
// to an InterceptSession, after whose TLS handshake this session reads the
// tunnel's requests as https ones. An Upgrade goes to a TunnelSession too.
#pragma once

#include "context/server_context.hpp"
#include "core/refusals.hpp"
#include "fanout/client_fanouts.hpp"
#include "http/request_policy.hpp"
#include "io/client_connection.hpp"
#include "session/collector_leg.hpp"

#include <cstdint>
#include <memory>
#include <optional>

namespace spe {

class DownstreamSession : public Abortable, public std::enable_shared_from_this<DownstreamSession> {
public:
    /// `socket` must already be bound to this connection's strand (or, with one
    /// I/O thread, to the io_context).
    DownstreamSession(tcp::socket socket, std::shared_ptr<ServerContext> ctx);

    void start();
    /// SIGTERM: a session waiting for a new request closes; a busy one finishes it first.
    void stop_if_idle();
    void abort() override;

private:
    awaitable<void> run();
    /// Between requests: frees the read buffer and reads
    /// (bounded) what the client sends next into it, so an idle connection holds
    /// no parser or request frame and 0.5 KB of buffer. False: the client
    /// left, timed out or we are stopping.
    awaitable<bool> wait_for_request();
    awaitable<bool> serve_one();
    /// Before a request is read: waits (bounded) while the fan-out executor is more than
    /// --max-fanout-backlog of this connection's fan-outs behind (FanoutBacklog), SPE's own
    /// overload, never a proxy's; how long, in held_us_ for the record of the request read next.
    awaitable<void> keep_pace_with_measuring();
    awaitable<bool> forward(Request req, RequestRecord record, bool keep_alive);
    /// The upstream copy of a client request: tagged with its record's id (the Collector tells which proxies'
    /// requests it caused; not in --dummy mode) and, inside an intercepted tunnel, marked https. The record keeps
    /// the tag.
    Request tagged_upstream(const Request& req, RequestRecord& record, bool keep_alive) const;
    /// CONNECT: checked here, then handed over with the connection (true: it was intercepted, read its requests
    /// next).
    awaitable<bool> connect(const Request& req, RequestRecord record);
    /// An Upgrade (WebSocket): handed over to a TunnelSession (through the Collector, then tunnelled, not multiplied).
    awaitable<void> upgrade(Request req, RequestRecord record);
    /// A request read in an intercepted tunnel gets its upstream http form; false: refused.
    awaitable<bool> adopt_intercepted(Request& req, RequestRecord& record);
    /// Sends a short text reply from the Multiplier itself; returns what the client got.
    awaitable<Measure> reply_from_multiplier(const Refused& refused, bool head_request, bool keep_alive);
    awaitable<void> refuse(const Refused& refused, RequestRecord record, bool head_request);
    RequestRecord new_record(const Request& req);
    /// The order of the client that sent `req` (--order client), or nullptr (--order connection, no proxies).
    std::shared_ptr<ClientOrder> client_order(const Request& req);
    void close();

    std::shared_ptr<ServerContext> ctx_;
    ClientConnection client_;                   // its stream is TLS once a tunnel is intercepted
    std::optional<ConnectTarget> intercepted_;  // the tunnel's target, once intercepted
    CollectorLeg collector_;
    std::shared_ptr<ClientFanouts> fanouts_;
    std::string order_key_;  // the client its last request named (client_order)
    std::shared_ptr<ClientOrder> order_;
    WorkGuard work_;
    ConnectionCount connection_;
    std::optional<std::int64_t> held_us_;  // keep_pace_with_measuring's hold: the next record's client_held_us
    bool idle_ = true;                     // waiting for the first byte of a request
    bool refused_ = false;                 // an error reply was sent: close lingering (lingering_close.hpp)
};

}  // namespace spe
