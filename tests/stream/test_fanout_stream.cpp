// The fan-out against scripted proxies that each fail in their own way (one
// fragments its reply, one hangs past --timeout, one resets): the record is
// logged once, with each leg's own result, in both fan-out modes.
#include "core/config.hpp"
#include "core/wall_clock.hpp"
#include "fanout/fanout.hpp"
#include "fanout/proxy_leg.hpp"
#include "log/result_log.hpp"
#include "reference_md5.hpp"
#include "scripted_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace spe;
using namespace spe::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const std::string kBody = "The quick brown fox jumps over the lazy dog, again and again.";
const std::string kReply =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" +
    kBody;

/// A log file of its own, removed afterwards.
struct TempLog {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("spe-fanout-stream-" + std::to_string(::getpid()) + "-" + std::to_string(++serial) + ".jsonl");
    ~TempLog() { std::filesystem::remove(path); }
    std::vector<json> records() const {
        std::vector<json> out;
        std::ifstream in(path);
        for (std::string line; std::getline(in, line);)
            out.push_back(json::parse(line));
        return out;
    }
    static inline int serial = 0;
};

/// The reply `script` gives, measured by the proxy leg as the Collector's would be: the reference.
Measure reference_of(std::vector<Step> script) {
    asio::io_context ioc;
    ScriptedServer server(ioc, {std::move(script)});
    const std::vector<tcp::endpoint> endpoints{server.endpoint()};
    UpstreamConnection conn(ioc.get_executor(), endpoints, 64 * 1024);
    const HeaderPolicy policy;
    const WireRequest wire(Request{http::verb::get, "http://origin.test/x", 11});
    Measure out;
    asio::co_spawn(ioc, run_proxy_leg(conn, wire, false, ProxyLegLimits{2000ms, std::nullopt, 8192, 0}, policy, out),
                   [&](std::exception_ptr e) {
                       if (e) std::rethrow_exception(e);
                       ioc.stop();
                   });
    ioc.run_for(5s);
    server.stop();
    return out;
}

struct FanoutBed {
    asio::io_context ioc;
    TempLog log_file;
    std::vector<std::unique_ptr<ScriptedServer>> proxies;  // each serves from its own address
    Config config;
    std::optional<ResultLog> log;
    std::shared_ptr<ServerContext> ctx;
    std::shared_ptr<ClientFanouts> fanouts;

    FanoutBed(std::vector<std::vector<std::vector<Step>>> scripts, FanoutMode mode) {
        std::vector<ResolvedProxy> resolved;
        for (std::size_t i = 0; i < scripts.size(); ++i) {
            proxies.push_back(std::make_unique<ScriptedServer>(ioc, std::move(scripts[i])));
            resolved.push_back({"p" + std::to_string(i), {proxies.back()->endpoint()}});
        }
        config.mode = mode;
        config.timeout = 300ms;
        config.log_path = log_file.path.string();
        log.emplace(config);
        ctx = std::make_shared<ServerContext>(config, std::vector<tcp::endpoint>{}, std::move(resolved), *log, ioc);
        fanouts = std::make_shared<ClientFanouts>(ioc.get_executor(), ctx->proxies(), 4, 64 * 1024);
    }
    ~FanoutBed() {
        for (auto& p : proxies)
            p->stop();
    }

    /// One client request fanned out with `reference` as the Collector's reply; the records logged.
    std::vector<json> fan_out(const Measure& reference) {
        start_fan_out(reference);
        finish_fan_outs();
        fanouts->client_closed();
        log->close();
        return log_file.records();
    }

    /// Hands one client request's fan-out over, as the client's session does, without waiting for it.
    void start_fan_out(const Measure& reference) {
        begin_fan_out()->set_reference(Reference{reference, 200, std::nullopt, {}, nullptr});
    }

    /// A client request's fan-out, begun (its number given) but without the Collector's reply yet.
    std::shared_ptr<Fanout> begin_fan_out() {
        RequestRecord record;
        record.id = ctx->next_request_id();
        record.ts = unix_seconds();
        record.method = "GET";
        record.url = "http://origin.test/x";
        record.version = "HTTP/1.1";
        Request req{http::verb::get, record.url, 11};
        req.set(http::field::host, "origin.test");
        auto wire = std::make_shared<const WireRequest>(std::move(req));
        auto fanout = std::make_shared<Fanout>(ctx, fanouts, nullptr, std::move(record), wire, false);
        fanout->begin();
        return fanout;
    }

    void run_a_while() {
        for (int i = 0; i < 10; ++i) {
            ioc.run_for(20ms);
            ioc.restart();
        }
    }

    /// Until every fan-out has logged its record and let go of the context.
    void finish_fan_outs() {
        const auto give_up = Clock::now() + 10s;
        while (ctx->stop().unfinished_work() > 0 && Clock::now() < give_up) {
            ioc.run_for(20ms);
            ioc.restart();
        }
        REQUIRE(ctx->stop().unfinished_work() == 0);
    }
};

const json& leg(const json& record, std::string_view name) {
    for (const auto& p : record.at("proxies"))
        if (p.at("name") == name) return p;
    FAIL("no leg " << name);
    static const json none;
    return none;
}

}  // namespace

TEST_CASE("a fan-out to a fragmenting, a hanging and a resetting proxy is logged once, each leg its own result") {
    const auto mode = GENERATE(FanoutMode::sequential, FanoutMode::concurrent);
    CAPTURE(mode == FanoutMode::sequential ? "sequential" : "concurrent");
    const auto reference = reference_of({send_bytes(kReply)});
    REQUIRE(reference.md5 == reference_md5(kBody));

    FanoutBed bed({{{send_bytes(kReply, 1)}},
                   {{send_bytes(kReply.substr(0, 20)), hang_conn()}},
                   {{send_bytes(kReply.substr(0, kReply.size() - 10)), pause_for(30ms), reset_conn()}}},
                  mode);
    const auto started = Clock::now();
    const auto records = bed.fan_out(reference);
    REQUIRE(records.size() == 1);
    const auto& r = records[0];
    CHECK(r.at("method") == "GET");
    CHECK(r.at("client_status") == 200);
    CHECK(r.at("collector").at("md5") == reference_md5(kBody));
    REQUIRE(r.at("proxies").size() == 3);

    const auto& fragmenting = leg(r, "p0");
    CHECK(fragmenting.at("result") == "OK");
    CHECK(fragmenting.at("error").is_null());
    CHECK(fragmenting.at("status") == 200);
    CHECK(fragmenting.at("bytes") == kBody.size());
    CHECK(fragmenting.at("md5") == reference_md5(kBody));

    const auto& hanging = leg(r, "p1");
    CHECK(hanging.at("result") == "NO_RESPONSE");
    CHECK(hanging.at("error") == to_string(LegError::timeout));
    CHECK(hanging.at("total_us").get<std::int64_t>() >= 290'000);
    CHECK(hanging.at("md5").is_null());

    const auto& resetting = leg(r, "p2");
    CHECK(resetting.at("error") == to_string(LegError::reset));
    CHECK(resetting.at("status") == 200);            // the header arrived, the body broke off
    CHECK(resetting.at("result") == "NO_RESPONSE");  // a reset is no usable reply, whenever it comes
    CHECK(resetting.at("md5").is_null());

    // The hanging proxy's deadline bounds the record, not the scripted peer's silence.
    CHECK(Clock::now() - started < 5s);
    // Each proxy got the request once.
    for (const auto& p : bed.proxies)
        CHECK(p->requests_seen() == 1);
}

TEST_CASE("a fan-out whose reference falls short in sequential mode sends no legs, and says why") {
    auto reference = reference_of({send_bytes(kReply)});
    FanoutBed bed({{{send_bytes(kReply)}}}, FanoutMode::sequential);
    RequestRecord record;
    record.id = bed.ctx->next_request_id();
    record.ts = unix_seconds();
    record.method = "GET";
    record.url = "http://origin.test/x";
    auto wire = std::make_shared<const WireRequest>(Request{http::verb::get, record.url, 11});
    {
        auto fanout = std::make_shared<Fanout>(bed.ctx, bed.fanouts, nullptr, std::move(record), wire, false);
        fanout->begin();
        fanout->set_reference(Reference{reference, 200, std::nullopt, "the Collector's reply broke off", nullptr});
    }
    for (int i = 0; i < 50 && bed.ctx->stop().unfinished_work() > 0; ++i) {
        bed.ioc.run_for(20ms);
        bed.ioc.restart();
    }
    bed.log->close();
    const auto records = bed.log_file.records();
    REQUIRE(records.size() == 1);
    CHECK(records[0].at("note") == "the Collector's reply broke off");
    CHECK(records[0].at("proxies").empty());
    CHECK(bed.proxies[0]->requests_seen() == 0);
}

TEST_CASE("a client that leaves while a leg of its is still to come keeps the proxy connection for it") {
    // The client's first request is answered by every proxy and its connection is idle; the client then sends
    // a second one and leaves before SPE sends its legs (the Collector's reply comes after). The proxy gets the
    // second request on the connection of the first, as the client sent both on one, and that connection
    // closes after it, as the client's did.
    const auto reference = reference_of({send_bytes(kReply)});
    FanoutBed bed({{{send_bytes(kReply)}, {send_bytes(kReply)}}}, FanoutMode::sequential);
    bed.start_fan_out(reference);
    auto second = bed.begin_fan_out();
    bed.run_a_while();  // the first leg is done, its connection idle
    bed.fanouts->client_closed();
    bed.run_a_while();
    second->set_reference(Reference{reference, 200, std::nullopt, {}, nullptr});
    second.reset();
    bed.finish_fan_outs();
    bed.log->close();
    const auto records = bed.log_file.records();
    REQUIRE(records.size() == 2);
    for (const auto& r : records)
        CHECK(leg(r, "p0").at("result") == "OK");
    CHECK(bed.proxies[0]->requests_seen() == 2);
    CHECK(bed.proxies[0]->connections_accepted() == 1);
}

TEST_CASE("fan-outs still pending when their client leaves share its proxy connection") {
    // A client that sends faster than SPE measures leaves fan-outs behind when it goes. They are
    // still sent one at a time per proxy, as the client sent them: on the connection its earlier
    // requests kept alive, not on a new connection each (which would cost a connect per leg
    // exactly when SPE is furthest behind).
    const auto reference = reference_of({send_bytes(kReply)});
    FanoutBed bed({{{send_bytes(kReply)}, {send_bytes(kReply)}, {send_bytes(kReply)}}}, FanoutMode::sequential);
    for (int i = 0; i < 3; ++i)
        bed.start_fan_out(reference);
    bed.fanouts->client_closed();  // before any leg has run: posted ahead of them
    bed.finish_fan_outs();
    bed.log->close();
    const auto records = bed.log_file.records();
    REQUIRE(records.size() == 3);
    for (const auto& r : records)
        CHECK(leg(r, "p0").at("result") == "OK");
    CHECK(bed.proxies[0]->requests_seen() == 3);
    CHECK(bed.proxies[0]->connections_accepted() == 1);
}
