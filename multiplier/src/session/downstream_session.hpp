// The client side of one connection: read requests (bounded), answer each in
// order from the Collector, hand it to the fan-out, then read the next one.
// Pipelined requests wait in the read buffer, so replies keep request order.
// Between requests only the socket and a small wait remain: no buffer, no parser.
// A CONNECT is tunnelled, or, with --intercept-tls, answered with TLS: the
// session then reads the tunnel's requests as https ones (tls_interceptor.hpp).
#pragma once

#include "core/refusals.hpp"
#include "io/client_stream.hpp"
#include "session/collector_leg.hpp"
#include "session/proxy_pools.hpp"
#include "session/server_context.hpp"
#include "tls/client_hello.hpp"
#include "tunnel/connect_tunnel.hpp"

#include "http/read_buffer.hpp"

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
    /// Between requests: frees the read buffer and waits (bounded) until the
    /// client sends something, so an idle connection holds no buffer, parser
    /// or request frame. False: the client left, timed out or we are stopping.
    awaitable<bool> wait_for_request();
    awaitable<bool> serve_one();
    /// Before a request is read: waits (bounded) while the fan-out executor is too far behind this
    /// connection (ProxyPools::backlog), SPE's own overload, never a proxy's.
    awaitable<void> keep_pace_with_measuring();
    awaitable<bool> forward(Request req, RequestRecord record, bool keep_alive);
    /// CONNECT: a plain tunnel, or the start of an intercepted one (true: read its requests next).
    awaitable<bool> connect(const Request& req, RequestRecord record);
    awaitable<bool> intercept(const ConnectTarget& target, unsigned client_version, RequestRecord record);
    /// After the 200 of an interception: whether the client's first byte starts a TLS record.
    awaitable<std::optional<bool>> client_speaks_tls();
    struct HelloRead {
        std::optional<ClientHello> hello;  // nullopt: not one the scan understands (TLS will say why)
        error_code ended;                  // the client closed, reset or went silent before it was whole
    };
    /// After the first TLS byte: reads into buffer_ (nothing consumed: the
    /// bytes go to TLS, or to the Collector when the tunnel is passed unread)
    /// until the ClientHello is whole.
    awaitable<HelloRead> read_client_hello();
    awaitable<void> tunnel(const TunnelRequest& tunnel, RequestRecord record);
    /// An Upgrade (WebSocket): through the Collector, then tunnelled, not multiplied (upgrade_tunnel.hpp).
    awaitable<void> upgrade(Request req, RequestRecord record);
    /// A request read in an intercepted tunnel gets its upstream http form; false: refused.
    awaitable<bool> adopt_intercepted(Request& req, RequestRecord& record);
    /// Sends a short text reply from the Multiplier itself; returns what the client got.
    awaitable<Measure> reply_from_multiplier(const Refused& refused, bool head_request, bool keep_alive);
    awaitable<void> refuse(const Refused& refused, RequestRecord record, bool head_request);
    RequestRecord new_record(const Request& req);
    std::string client_ip() const;  // client_address_ without its port
    void close();

    std::shared_ptr<ServerContext> ctx_;
    TimedStream client_;
    ClientStream io_;                           // client_, or TLS over it once a tunnel is intercepted
    std::optional<ConnectTarget> intercepted_;  // the tunnel's target, once intercepted
    ReadBuffer buffer_;
    std::string client_address_;
    CollectorLeg collector_;
    std::shared_ptr<ProxyPools> pools_;
    WorkGuard work_;
    bool idle_ = true;      // waiting for the first byte of a request
    bool refused_ = false;  // an error reply was sent: close lingering (lingering_close.hpp)
};

}  // namespace spe
