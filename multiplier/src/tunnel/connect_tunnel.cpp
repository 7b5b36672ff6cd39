#include "tunnel/connect_tunnel.hpp"

#include "http/header_policy.hpp"
#include "io/upstream_connection.hpp"
#include "tunnel/byte_pump.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <algorithm>

namespace spe {

std::string connection_established(const std::string& via_name) {
    return "HTTP/1.1 200 Connection established\r\nVia: 1.1 " + via_name + "\r\n\r\n";
}

awaitable<std::optional<Refused>> collector_reply_header(UpstreamConnection& conn, const WireRequest& req,
                                                         http::response_parser<http::empty_body>& parser,
                                                         const Config& cfg, Measure& m, std::string_view what) {
    const auto t0 = Clock::now();
    if (auto e = co_await conn.send(req, t0, t0 + cfg.client_timeout, m); e != LegError::none) {
        m.error = e;
        co_return Refused{collector_failure(e), "the Collector could not be reached: " + std::string(to_string(e))};
    }
    parser.skip(true);
    error_code ec;
    conn.stream().expires_after(cfg.client_timeout);
    m.header_bytes = co_await http::async_read_header(conn.stream(), conn.buffer(), parser, with_ec(ec));
    if (ec) {
        m.error = classify(ec, false);
        co_return Refused{Refusal::collector_failed,
                          "the Collector's reply to " + std::string(what) + " was unreadable: " + ec.message()};
    }
    m.status = parser.get().result_int();
    m.version = parser.get().version();
    co_return std::nullopt;
}

awaitable<std::optional<Refused>> run_connect_tunnel(TimedStream& client, ReadBuffer& client_buffer,
                                                     const TunnelRequest& tunnel, const Config& cfg,
                                                     const std::vector<tcp::endpoint>& collector,
                                                     RequestRecord& record) {
    const auto target = tunnel.target.host + ":" + std::to_string(tunnel.target.port);
    Request message{http::verb::connect, target, 11};
    message.set(http::field::host, target);
    append_via(message, tunnel.client_version, cfg.via_name);
    const WireRequest connect(std::move(message));
    UpstreamConnection upstream(client.get_executor(), collector, read_buffer_limit(cfg));
    Measure& m = record.collector;
    const auto t0 = Clock::now();
    http::response_parser<http::empty_body> parser;
    if (auto refused = co_await collector_reply_header(upstream, connect, parser, cfg, m, "CONNECT")) co_return refused;
    error_code ec;
    if (*m.status / 100 != 2)
        co_return Refused{
            Refusal::collector_refused_tunnel,
            "the Collector refused the tunnel: " + std::to_string(*m.status) + " " + std::string(parser.get().reason()),
            *m.status};

    if (!tunnel.established) {
        const auto established = connection_established(cfg.via_name);
        client.expires_after(cfg.client_timeout);
        co_await asio::async_write(client, asio::buffer(established), with_ec(ec));
    }
    record.client_status = 200;
    std::uint64_t up_bytes = 0, down_bytes = 0;
    if (ec || !co_await flush_ahead(upstream.buffer(), client, client, cfg.client_timeout, down_bytes) ||
        !co_await flush_ahead(client_buffer, upstream.stream(), upstream.stream(), cfg.client_timeout, up_bytes))
        co_return std::nullopt;
    const auto pumped = co_await pump_both_ways(client, client, upstream.stream(), cfg.client_timeout);
    up_bytes += pumped.up;
    m.bytes = down_bytes + pumped.down;
    m.total_us = micros_since(t0);
    record.note = "CONNECT tunnel (not multiplied" + (tunnel.why.empty() ? "" : ": " + tunnel.why) +
                  "): " + std::to_string(up_bytes) + " bytes up, " + std::to_string(m.bytes) + " bytes down";
    co_return std::nullopt;
}

}  // namespace spe
