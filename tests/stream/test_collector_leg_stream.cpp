// The Collector leg against a scripted Collector that fragments, interrupts
// and breaks its replies, relaying to a real client socket: what the client
// receives (the framing re-done for it: chunked for HTTP/1.1 when the length
// is unknown, close-delimited for HTTP/1.0) and what the measure records.
#include "core/config.hpp"
#include "log/result_log.hpp"
#include "reference_md5.hpp"
#include "scripted_server.hpp"
#include "session/collector_leg.hpp"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <catch2/catch.hpp>

#include <map>

using namespace spe;
using namespace spe::test;
using namespace std::chrono_literals;

namespace {

const std::string kBody = "The quick brown fox jumps over the lazy dog, again and again.";
const std::string kFields = "Content-Type: text/plain\r\nX-Origin: yes\r\n";
// The beds' --reference-bytes is four times this: the most one body kept for the proxies may take.
constexpr std::size_t kBodyKeptAtMost = 1000;
const std::string kHead =
    "HTTP/1.1 200 OK\r\n" + kFields + "Content-Length: " + std::to_string(kBody.size()) + "\r\n\r\n";

/// kBody chunked in pieces of `size` bytes, with a chunk extension and a trailer.
std::string chunked_reply(std::size_t size) {
    std::string out = "HTTP/1.1 200 OK\r\n" + kFields + "Transfer-Encoding: chunked\r\n\r\n";
    for (std::size_t off = 0; off < kBody.size(); off += size) {
        const auto piece = kBody.substr(off, size);
        out += fmt::format("{:x};ext=1\r\n", piece.size()) + piece + "\r\n";
    }
    return out + "0\r\nX-Trailer: t\r\n\r\n";
}

/// One reply as a client parsed it: the interim replies' statuses, then the final one.
struct ClientView {
    std::vector<unsigned> interim;
    unsigned status = 0;
    std::string body;
    bool complete = false;  // the final reply parsed to its end
    bool chunked = false;
    bool has_length = false;
    bool close = false;  // Connection: close
    std::string via;
    std::map<std::string, std::string> fields;
    bool has_field(const std::string& name) const { return fields.count(name) > 0; }
    std::string field(const std::string& name) const { return has_field(name) ? fields.at(name) : std::string(); }
};

/// Parses what the client received until the connection's end, as a client would.
ClientView parse_client_bytes(const std::string& wire, bool head_request) {
    ClientView v;
    std::string_view rest = wire;
    for (;;) {
        http::response_parser<http::string_body> p;
        p.skip(head_request);
        p.eager(true);
        error_code ec;
        while (!rest.empty() && !p.is_done()) {
            const auto used = p.put(asio::buffer(rest.data(), rest.size()), ec);
            rest.remove_prefix(used);
            if (ec || used == 0) break;
        }
        if (ec == http::error::need_more) ec = {};
        if (!ec && !p.is_done() && p.is_header_done() && p.need_eof() && rest.empty()) p.put_eof(ec);
        if (!p.is_header_done()) return v;
        const auto& h = p.get();
        const unsigned status = h.result_int();
        if (status >= 100 && status < 200) {
            v.interim.push_back(status);
            continue;
        }
        v.status = status;
        v.body = h.body();
        v.complete = !ec && p.is_done();
        v.chunked = p.chunked();
        v.has_length = h.find(http::field::content_length) != h.end();
        v.close = !p.keep_alive();
        for (const auto& f : h)
            v.fields[std::string(f.name_string())] = std::string(f.value());
        if (const auto via = h.find(http::field::via); via != h.end()) v.via = std::string(via->value());
        return v;
    }
}

/// A Multiplier's context with the scripted Collector as its parent, and a
/// client connection on loopback whose server side the leg writes to.
struct CollectorLegBed {
    asio::io_context ioc;
    ScriptedServer collector;
    Config config;
    ResultLog log{config};
    std::unique_ptr<ServerContext> ctx;
    tcp::socket client{ioc};
    std::optional<TimedStream> client_side;

    explicit CollectorLegBed(std::vector<std::vector<Step>> scripts) : collector(ioc, std::move(scripts)) {
        config.client_timeout = 2000ms;
        config.via_name = "spe-test";
        config.reference_bytes = 4 * kBodyKeptAtMost;
        ctx = std::make_unique<ServerContext>(config, std::vector<tcp::endpoint>{collector.endpoint()},
                                              std::vector<ResolvedProxy>{}, log, ioc);
        tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        client.connect(acceptor.local_endpoint());
        client_side.emplace(acceptor.accept());
    }
    ~CollectorLegBed() { collector.stop(); }

    /// Relays one request; `http11` and `keep_alive`: what the client asked for.
    RelayOutcome relay(bool http11 = true, bool head = false, bool keep_alive = true, bool keep_body = false) {
        Request req{head ? http::verb::head : http::verb::get, "http://origin.test/x", 11};
        req.set(http::field::host, "origin.test");
        const WireRequest wire(std::move(req));
        CollectorLeg leg(ioc.get_executor(), *ctx);
        ClientStream stream(*client_side);
        RelayOutcome out;
        bool done = false;
        asio::co_spawn(ioc, leg.relay(wire, ClientSide{stream, head, http11, keep_alive}, nullptr, keep_body),
                       [&](std::exception_ptr e, RelayOutcome o) {
                           if (e) std::rethrow_exception(e);
                           out = std::move(o);
                           done = true;
                           ioc.stop();  // the scripted Collector's accept loop would keep run_for busy
                       });
        ioc.run_for(10s);
        ioc.restart();
        REQUIRE(done);
        return out;
    }

    /// Everything the client received, once the Multiplier's side is closed.
    std::string client_received() {
        client_side->close();
        std::string in;
        error_code ec;
        asio::read(client, asio::dynamic_buffer(in), ec);
        return in;
    }
};

void check_measured_whole(const Measure& m) {
    CHECK(m.error == LegError::none);
    CHECK(m.status == 200u);
    CHECK(m.bytes == kBody.size());
    CHECK(m.md5 == reference_md5(kBody));
}

/// A body of unknown length as docs/architecture.md's collector_leg row has it reach an HTTP/1.1 client:
/// chunked again, the connection kept.
void check_rechunked(const ClientView& got) {
    CHECK(got.complete);
    CHECK(got.chunked);
    CHECK_FALSE(got.has_length);
    CHECK_FALSE(got.close);
    CHECK(got.body == kBody);
}

/// ... and an HTTP/1.0 client: read until the Multiplier closes.
void check_close_delimited(const ClientView& got) {
    CHECK(got.complete);
    CHECK_FALSE(got.chunked);
    CHECK_FALSE(got.has_length);
    CHECK(got.close);
    CHECK(got.body == kBody);
}

}  // namespace

TEST_CASE("Collector leg: a reply sent one byte at a time reaches the client whole, with its length") {
    CollectorLegBed bed({{send_bytes(kHead + kBody, 1)}});
    const auto out = bed.relay();
    check_measured_whole(out.measure);
    CHECK(out.measure.header_bytes == kHead.size());
    CHECK(out.client_answered);
    CHECK_FALSE(out.client_failed);
    CHECK(out.keep_alive);
    const auto got = parse_client_bytes(bed.client_received(), false);
    CHECK(got.complete);
    CHECK(got.status == 200u);
    CHECK(got.body == kBody);
    CHECK(got.has_length);
    CHECK_FALSE(got.chunked);
    CHECK(got.field("X-Origin") == "yes");
    CHECK_THAT(got.via, Catch::Contains("spe-test"));
}

TEST_CASE("Collector leg: the body kept for the proxies' comparisons is the body the client got") {
    const auto chunked = GENERATE(false, true);
    CAPTURE(chunked);
    CollectorLegBed bed({{send_bytes(chunked ? chunked_reply(7) : kHead + kBody, 5)}});
    auto out = bed.relay(true, false, true, true);
    check_measured_whole(out.measure);
    REQUIRE(out.body);
    CHECK(out.body->bytes == kBody);
    CHECK(out.body->md5 == out.measure.md5);
    CHECK(parse_client_bytes(bed.client_received(), false).body == kBody);
    CHECK(bed.ctx->reference_budget().in_use() == kBody.size());
    out.body.reset();  // the fan-out done with it
    CHECK(bed.ctx->reference_budget().in_use() == 0);
}

TEST_CASE("Collector leg: a body is kept only when asked for and within the budget") {
    SECTION("not asked for") {
        CollectorLegBed bed({{send_bytes(kHead + kBody)}});
        CHECK_FALSE(bed.relay().body);
    }
    const std::string big(kBodyKeptAtMost + 1, 'b');
    SECTION("larger than the bound, its length known") {
        CollectorLegBed bed(
            {{send_bytes("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big)}});
        const auto out = bed.relay(true, false, true, true);
        CHECK(out.measure.bytes == big.size());
        CHECK_FALSE(out.body);
    }
    SECTION("larger than the bound, chunked") {
        CollectorLegBed bed({{send_bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                         fmt::format("{:x}\r\n", big.size()) + big + "\r\n0\r\n\r\n")}});
        const auto out = bed.relay(true, false, true, true);
        CHECK(out.measure.bytes == big.size());
        CHECK_FALSE(out.body);
    }
}

TEST_CASE("Collector leg: a header split in the middle of a line, the halves apart") {
    const auto split = kHead.find("Type") + 2;  // "Content-Ty" | "pe: text/plain"
    CollectorLegBed bed(
        {{send_bytes(kHead.substr(0, split)), pause_for(30ms), send_bytes(kHead.substr(split) + kBody)}});
    const auto out = bed.relay();
    check_measured_whole(out.measure);
    const auto got = parse_client_bytes(bed.client_received(), false);
    CHECK(got.complete);
    CHECK(got.body == kBody);
    CHECK(got.field("Content-Type") == "text/plain");
}

TEST_CASE("Collector leg: a chunked body whose chunk boundaries are split is re-chunked for HTTP/1.1") {
    // Pieces of 3 bytes against chunks of 7: sizes, extensions and CRLFs cut everywhere.
    auto piece = GENERATE(std::size_t{1}, std::size_t{3}, std::size_t{0});
    CAPTURE(piece);
    CollectorLegBed bed({{send_bytes(chunked_reply(7), piece)}});
    const auto out = bed.relay();
    check_measured_whole(out.measure);
    CHECK(out.keep_alive);
    check_rechunked(parse_client_bytes(bed.client_received(), false));
}

TEST_CASE("Collector leg: a body of unknown length goes to an HTTP/1.0 client close-delimited") {
    CollectorLegBed bed({{send_bytes(chunked_reply(7), 5)}});
    const auto out = bed.relay(false);
    check_measured_whole(out.measure);
    CHECK_FALSE(out.keep_alive);  // the client learns the end by the close
    check_close_delimited(parse_client_bytes(bed.client_received(), false));
}

TEST_CASE("Collector leg: an HTTP/1.0 client that wants keep-alive keeps it when the length is known") {
    CollectorLegBed bed({{send_bytes(kHead + kBody)}});
    const auto out = bed.relay(false, false, true);
    check_measured_whole(out.measure);
    CHECK(out.keep_alive);
    const auto got = parse_client_bytes(bed.client_received(), false);
    CHECK(got.complete);
    CHECK(got.field("Connection") == "keep-alive");
    CHECK(got.body == kBody);
}

TEST_CASE("Collector leg: a close-delimited body from the Collector") {
    const std::string head = "HTTP/1.1 200 OK\r\n" + kFields + "Connection: close\r\n\r\n";
    SECTION("is chunked for an HTTP/1.1 client, which stays kept alive") {
        CollectorLegBed bed({{send_bytes(head), pause_for(20ms), send_bytes(kBody, 4), close_conn()}});
        const auto out = bed.relay();
        check_measured_whole(out.measure);
        CHECK(out.keep_alive);
        check_rechunked(parse_client_bytes(bed.client_received(), false));
    }
    SECTION("is close-delimited again for an HTTP/1.0 client") {
        CollectorLegBed bed({{send_bytes(head + kBody, 9), close_conn()}});
        const auto out = bed.relay(false);
        check_measured_whole(out.measure);
        CHECK_FALSE(out.keep_alive);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK(got.complete);
        CHECK_FALSE(got.chunked);
        CHECK(got.body == kBody);
    }
}

TEST_CASE("Collector leg: interim replies, then the final one") {
    const std::string hints = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
    SECTION("an HTTP/1.1 client gets each interim reply before the final one") {
        CollectorLegBed bed({{send_bytes(hints, 2), pause_for(20ms), send_bytes(kHead + kBody, 1)}});
        const auto out = bed.relay();
        check_measured_whole(out.measure);
        REQUIRE(out.measure.interim.size() == 1);
        CHECK(out.measure.interim[0].status == 103u);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK(got.interim == std::vector<unsigned>{103});
        CHECK(got.status == 200u);
        CHECK(got.body == kBody);
    }
    SECTION("an HTTP/1.0 client gets none of them (RFC 9110 15.2), the measure still has them") {
        CollectorLegBed bed({{send_bytes(hints + "HTTP/1.1 102 Processing\r\n\r\n" + kHead + kBody, 1)}});
        const auto out = bed.relay(false);
        check_measured_whole(out.measure);
        CHECK(out.measure.interim.size() == 2);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK(got.interim.empty());
        CHECK(got.status == 200u);
        CHECK(got.body == kBody);
    }
}

TEST_CASE("Collector leg: a status below 100 is malformed, neither relayed as interim nor final") {
    CollectorLegBed bed({{send_bytes("HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n"), hang_conn()}});
    const auto out = bed.relay();
    CHECK(out.measure.error == LegError::bad_header);
    CHECK(out.measure.interim.empty());
    CHECK_FALSE(out.client_answered);
}

TEST_CASE("Collector leg: a body cut short") {
    SECTION("Content-Length longer than the body, then close: truncated, the client's connection closed") {
        CollectorLegBed bed({{send_bytes(kHead + kBody.substr(0, 10), 3), close_conn()}});
        const auto out = bed.relay();
        CHECK(out.measure.error == LegError::truncated);
        CHECK(out.measure.status == 200u);
        CHECK_FALSE(out.measure.md5);
        CHECK(out.measure.bytes == 10);
        CHECK(out.client_answered);
        CHECK_FALSE(out.keep_alive);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK(got.status == 200u);
        CHECK_FALSE(got.complete);  // the client sees the reply end short of its length
        CHECK(got.body == kBody.substr(0, 10));
    }
    SECTION("reset in the middle of the body") {
        CollectorLegBed bed({{send_bytes(kHead + kBody.substr(0, 10)), pause_for(30ms), reset_conn()}});
        const auto out = bed.relay();
        CHECK(out.measure.error == LegError::reset);
        CHECK(out.measure.status == 200u);
        CHECK_FALSE(out.measure.md5);
        CHECK_FALSE(out.keep_alive);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK_FALSE(got.complete);
    }
    SECTION("a chunked body cut inside a chunk: the client's chunked reply has no last chunk") {
        const auto reply = chunked_reply(7);
        CollectorLegBed bed({{send_bytes(reply.substr(0, reply.size() / 2), 1), close_conn()}});
        const auto out = bed.relay();
        CHECK(out.measure.error == LegError::truncated);
        CHECK_FALSE(out.measure.md5);
        const auto got = parse_client_bytes(bed.client_received(), false);
        CHECK(got.chunked);
        CHECK_FALSE(got.complete);
    }
    SECTION("no reply at all, the Collector closes: nothing sent to the client") {
        CollectorLegBed bed({{close_conn()}});
        const auto out = bed.relay();
        CHECK(out.measure.error == LegError::closed);
        CHECK_FALSE(out.measure.status);
        CHECK_FALSE(out.client_answered);
        CHECK(bed.client_received().empty());
    }
}

TEST_CASE("Collector leg: the fetch stamps are for the record, not the client") {
    const std::string head = "HTTP/1.1 200 OK\r\nX-SPE-Fetch: 65f1-1c2.7; t=1700000000.000\r\nContent-Length: " +
                             std::to_string(kBody.size()) + "\r\n\r\n";
    CollectorLegBed bed({{send_bytes(head + kBody, 5)}});
    const auto out = bed.relay();
    check_measured_whole(out.measure);
    CHECK(out.measure.fetch == "65f1-1c2.7; t=1700000000.000");
    const auto got = parse_client_bytes(bed.client_received(), false);
    CHECK_FALSE(got.has_field("X-SPE-Fetch"));
    CHECK(got.body == kBody);
}

TEST_CASE("Collector leg: a reply to HEAD carries no body to the client") {
    CollectorLegBed bed({{send_bytes(kHead, 1)}});
    const auto out = bed.relay(true, true);
    CHECK(out.measure.error == LegError::none);
    CHECK(out.measure.status == 200u);
    CHECK(out.measure.bytes == 0);
    CHECK(out.measure.md5 == reference_md5(""));
    const auto got = parse_client_bytes(bed.client_received(), true);
    CHECK(got.complete);
    CHECK(got.field("Content-Length") == std::to_string(kBody.size()));
    CHECK(got.body.empty());
}
