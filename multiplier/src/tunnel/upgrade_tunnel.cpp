#include "tunnel/upgrade_tunnel.hpp"

#include "http/field_list.hpp"
#include "http/header_policy.hpp"
#include "http/wire_request.hpp"
#include "io/upstream_connection.hpp"
#include "tunnel/byte_pump.hpp"
#include "tunnel/connect_tunnel.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace spe {
bool is_upgrade_request(const Request& req) {
    return req.count(http::field::upgrade) && lists_token(req[http::field::connection], "upgrade");
}

awaitable<std::optional<Refused>> run_upgrade_tunnel(ClientStream& client, ReadBuffer& client_buffer,
                                                     const Request& client_request, Request upstream, const Config& cfg,
                                                     const std::vector<tcp::endpoint>& collector,
                                                     RequestRecord& record) {
    upstream.set(http::field::upgrade, client_request[http::field::upgrade]);
    upstream.set(http::field::connection, "Upgrade");
    const WireRequest wire(std::move(upstream));
    UpstreamConnection conn(client.get_executor(), collector, read_buffer_limit(cfg));
    Measure& m = record.collector;
    const auto t0 = Clock::now();
    http::response_parser<http::empty_body> parser;  // only a 101 is relayed, and it has no body
    if (auto refused = co_await collector_reply_header(conn, wire, parser, cfg, m, "the upgrade")) co_return refused;
    error_code ec;
    if (*m.status != 101)
        co_return Refused{Refusal::upgrade_not_accepted,
                          "the upgrade to " + std::string(client_request[http::field::upgrade]) +
                              " was not accepted upstream: " + std::to_string(*m.status) + " " +
                              std::string(parser.get().reason())};

    http::response<http::empty_body> switching = parser.release();
    append_via(switching, switching.version(), cfg.via_name);
    http::response_serializer<http::empty_body> serializer(switching);
    client.expires_after(cfg.client_timeout);
    co_await http::async_write_header(client, serializer, with_ec(ec));
    record.client_status = 101;
    std::uint64_t up = 0, down = 0;
    if (ec || !co_await flush_ahead(conn.buffer(), client, client.transport(), cfg.client_timeout, down) ||
        !co_await flush_ahead(client_buffer, conn.stream(), conn.stream(), cfg.client_timeout, up))
        co_return std::nullopt;
    const auto pumped = co_await pump_both_ways(client, client.transport(), conn.stream(), cfg.client_timeout);
    m.bytes = down + pumped.down;
    m.total_us = micros_since(t0);
    record.note = "upgraded to " + std::string(client_request[http::field::upgrade]) +
                  ", tunnelled (not multiplied): " + std::to_string(up + pumped.up) + " bytes up, " +
                  std::to_string(m.bytes) + " bytes down";
    co_return std::nullopt;
}

}  // namespace spe
