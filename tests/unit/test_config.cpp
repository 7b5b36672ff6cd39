#include "core/config.hpp"
#include "core/cpu_placement.hpp"
#include "core/flag_table.hpp"

#include <catch2/catch.hpp>

#include <sched.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace {
spe::CommandLine command(std::vector<std::string> args) {
    args.insert(args.begin(), "spe-multiplier");
    std::vector<const char*> argv;
    for (auto& a : args)
        argv.push_back(a.c_str());
    return spe::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::optional<spe::Config> parse(std::vector<std::string> args) {
    auto parsed = command(std::move(args));
    if (parsed.action != spe::Action::run) return std::nullopt;
    return parsed.config;
}
}  // namespace

TEST_CASE("flags give a typed config with ROPE's defaults") {
    auto c =
        parse({"--collector", "127.0.0.1:3128", "--proxy", "squid=127.0.0.1:3129", "--proxy", "ats=localhost:8080"});
    REQUIRE(c);
    CHECK(c->listen.to_string() == "127.0.0.1:8080");
    CHECK(c->collector->port == 3128);
    REQUIRE(c->proxies.size() == 2);
    CHECK(c->proxies[1].name == "ats");
    CHECK(c->proxies[1].endpoint.host == "localhost");
    CHECK(c->mode == spe::FanoutMode::sequential);
    CHECK(c->legs == spe::LegOrder::parallel);
    CHECK(c->timeout == std::chrono::seconds(30));
    CHECK(c->allow.allows(boost::asio::ip::make_address("127.0.0.1")));
    CHECK_FALSE(c->allow.allows(boost::asio::ip::make_address("192.0.2.1")));
    CHECK(c->connect_ports == std::vector<std::uint16_t>{443});
    CHECK_FALSE(c->client_fetch_stamp);
    CHECK(c->threads == 1);
    CHECK(c->fanout_threads == spe::auto_fanout_threads(spe::usable_cpus()));
}

namespace {
/// Runs `body` with this thread allowed on its current CPU only (what taskset -c N does to a process).
template <class Body>
void on_one_cpu(Body body) {
    cpu_set_t saved;
    REQUIRE(sched_getaffinity(0, sizeof(saved), &saved) == 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    REQUIRE(sched_setaffinity(0, sizeof(one), &one) == 0);
    body();
    sched_setaffinity(0, sizeof(saved), &saved);
}
}  // namespace

TEST_CASE("fan-out threads, auto: a thread of its own only when two CPUs or more are usable") {
    CHECK(spe::auto_fanout_threads(1) == 0);
    CHECK(spe::auto_fanout_threads(2) == 1);
    CHECK(spe::auto_fanout_threads(64) == 1);
    on_one_cpu([] {
        CHECK(spe::usable_cpus() == 1);
        CHECK(parse({"--collector", "h:1"})->fanout_threads == 0);
        CHECK(parse({"--collector", "h:1", "--fanout-threads", "auto"})->fanout_threads == 0);
        CHECK(parse({"--collector", "h:1", "--fanout-threads", "1"})->fanout_threads == 1);  // given: as given
    });
    if (spe::usable_cpus() >= 2) CHECK(parse({"--collector", "h:1", "--fanout-threads", "auto"})->fanout_threads == 1);
    CHECK(parse({"--collector", "h:1", "--fanout-threads", "0"})->fanout_threads == 0);
    CHECK(parse({"--collector", "h:1", "--fanout-threads", "64"})->fanout_threads == 64);
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--fanout-threads", "two"}),
                      Catch::Contains("--fanout-threads must be auto or 0..64, got 'two'"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--fanout-threads", "-1"}),
                      Catch::Contains("--fanout-threads must be auto or 0..64"));
}

TEST_CASE("the flag --client-fetch-stamp keeps the Collector's fetch stamp for the clients") {
    auto c = parse({"--collector", "127.0.0.1:3128", "--client-fetch-stamp"});
    REQUIRE(c);
    CHECK(c->client_fetch_stamp);
}

TEST_CASE("captures keep secret fields as received only with --capture-secrets") {
    auto c = parse({"--collector", "127.0.0.1:3128", "--capture-dir", "caps"});
    REQUIRE(c);
    CHECK_FALSE(c->capture_secrets);
    c = parse({"--collector", "127.0.0.1:3128", "--capture-dir", "caps", "--capture-secrets"});
    REQUIRE(c);
    CHECK(c->capture_secrets);
}

TEST_CASE("a config file takes the same keys; flags win") {
    const char* path = "spe-test-config.conf";
    {
        std::ofstream f(path);
        f << "collector = 127.0.0.1:4000\nproxy = a=127.0.0.1:4001\nproxy = b=127.0.0.1:4002\nmode = concurrent\n"
             "timeout = 2.5\nlisten = 127.0.0.1:9000\nlegs = serial\n";
    }
    auto c = parse({"--config", path, "--listen", "127.0.0.1:9100"});
    std::remove(path);
    REQUIRE(c);
    CHECK(c->collector->port == 4000);
    CHECK(c->proxies.size() == 2);
    CHECK(c->mode == spe::FanoutMode::concurrent);
    CHECK(c->legs == spe::LegOrder::serial);
    CHECK(c->timeout == std::chrono::milliseconds(2500));
    CHECK(c->listen.port == 9100);
}

TEST_CASE("durations: 500ms, 2s, 10m, 1h or a bare number of seconds") {
    using std::chrono::milliseconds;
    CHECK(spe::parse_duration("500ms") == milliseconds(500));
    CHECK(spe::parse_duration("2s") == milliseconds(2000));
    CHECK(spe::parse_duration("1.5s") == milliseconds(1500));
    CHECK(spe::parse_duration("10m") == milliseconds(600'000));
    CHECK(spe::parse_duration("1h") == milliseconds(3'600'000));
    CHECK(spe::parse_duration("2.5") == milliseconds(2500));
    for (const char* bad : {"", "s", "2x", "2 s", "ms", "2sec", "nan", "inf", "-1s", "0", "25h"})
        CHECK_THROWS_WITH(spe::parse_duration(bad), Catch::Contains("seconds"));
}

TEST_CASE("every duration flag takes the duration forms") {
    auto c = parse({"--collector", "h:1", "--timeout", "2s", "--client-timeout", "1m", "--drain-timeout", "500ms"});
    REQUIRE(c);
    CHECK(c->timeout == std::chrono::seconds(2));
    CHECK(c->client_timeout == std::chrono::minutes(1));
    CHECK(c->drain_timeout == std::chrono::milliseconds(500));
}

TEST_CASE("user errors are clear messages") {
    CHECK_THROWS_WITH(parse({}), Catch::Contains("--collector HOST:PORT is required"));
    CHECK_THROWS_WITH(parse({"--collector", "nohost"}), Catch::Contains("expected HOST:PORT"));
    CHECK_THROWS_WITH(parse({"--collector", "h:70000"}), Catch::Contains("out of range"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--proxy", "noequals"}), Catch::Contains("NAME=HOST:PORT"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--proxy", "a=h:2", "--proxy", "a=h:3"}),
                      Catch::Contains("used twice"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--mode", "parallel"}), Catch::Contains("sequential or concurrent"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--legs", "staggered"}), Catch::Contains("parallel or serial"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--timeout", "-1"}), Catch::Contains("seconds"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--allow", "10.0.0.0/40"}), Catch::Contains("--allow"));
    CHECK_THROWS_WITH(parse({"--dummy"}), Catch::Contains("--parent"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--fanout-threads", "65"}),
                      Catch::Contains("--fanout-threads must"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--no-such-flag"}), Catch::Contains("no-such-flag"));
    CHECK_THROWS_WITH(parse({"--config", "/nonexistent/spe.conf"}), Catch::Contains("cannot read config file"));
}

TEST_CASE("the Multiplier's name: this host's by default; 1 to 64 letters, digits, '.', '_' or '-'") {
    const auto host = spe::multiplier_name_of_host();
    CHECK(parse({"--collector", "h:1"})->name == host);
    CHECK(spe::parse_multiplier_name(host) == host);  // the default is a valid --name
    CHECK(parse({"--collector", "h:1", "--name", "east-1.lab_2"})->name == "east-1.lab_2");
    CHECK(parse({"--collector", "h:1", "--name", std::string(64, 'n')})->name.size() == 64);
    for (const auto* bad : {"a b", "", "x/y", "caf\xc3\xa9", "q\"uote"})
        CHECK_THROWS_WITH(parse({"--collector", "h:1", "--name", bad}),
                          Catch::Contains("--name must be 1 to 64 letters, digits, '.', '_' or '-'"));
    CHECK_THROWS_AS(parse({"--collector", "h:1", "--name", std::string(65, 'n')}), spe::ConfigError);
}

TEST_CASE("the tag prefix: none by default; 1 to 16 letters or digits") {
    CHECK(parse({"--collector", "h:1"})->tag_prefix.empty());
    CHECK(parse({"--collector", "h:1", "--tag-prefix", "m2"})->tag_prefix == "m2");
    for (const auto* bad : {"", "a.b", "a-b", "seventeen-chars17"})
        CHECK_THROWS_WITH(parse({"--collector", "h:1", "--tag-prefix", bad}),
                          Catch::Contains("--tag-prefix must be 1 to 16 letters or digits"));
}

TEST_CASE("dummy mode uses the parent as its only upstream") {
    auto c = parse({"--dummy", "--parent", "127.0.0.1:3128"});
    REQUIRE(c);
    CHECK(c->dummy);
    CHECK(c->collector->port == 3128);
    CHECK(c->proxies.empty());
}

TEST_CASE("interception flags: CA directory, patterns; nonsense combinations are refused") {
    auto c = parse({"--collector", "h:1", "--intercept-tls", "--ca-dir", "/x/ca", "--no-intercept", "*.bank.example",
                    "--no-intercept", "pinned.example"});
    REQUIRE(c);
    CHECK(c->intercept_tls);
    CHECK(c->ca_dir == "/x/ca");
    CHECK(c->no_intercept == std::vector<std::string>{"*.bank.example", "pinned.example"});
    auto plain = parse({"--collector", "h:1"});
    REQUIRE(plain);
    CHECK_FALSE(plain->intercept_tls);
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--no-intercept", "a.example"}),
                      Catch::Contains("only apply with --intercept-tls"));
    CHECK_THROWS_WITH(parse({"--dummy", "--parent", "h:1", "--intercept-tls"}),
                      Catch::Contains("--intercept-tls is for the Multiplier"));
}

TEST_CASE("unsafe requests are withheld from the proxies unless a replay port answers them") {
    auto plain = parse({"--collector", "127.0.0.1:3128", "--proxy", "squid=127.0.0.1:3129"});
    REQUIRE(plain);
    CHECK(plain->unsafe_requests == spe::UnsafeRequests::withhold);
    CHECK_FALSE(plain->replay_listen);

    auto replay = parse({"--collector", "127.0.0.1:3128", "--replay-listen", "127.0.0.1:3200", "--replay-ttl", "2m"});
    REQUIRE(replay);
    CHECK(replay->unsafe_requests == spe::UnsafeRequests::replay);
    CHECK(replay->replay_listen->port == 3200);
    CHECK(replay->replay_ttl == std::chrono::minutes(2));

    auto send = parse({"--collector", "127.0.0.1:3128", "--unsafe-requests", "send"});
    REQUIRE(send);
    CHECK(send->unsafe_requests == spe::UnsafeRequests::send);

    CHECK_THROWS_WITH(parse({"--collector", "127.0.0.1:3128", "--unsafe-requests", "replay"}),
                      Catch::Contains("needs --replay-listen"));
    CHECK_THROWS_WITH(parse({"--collector", "127.0.0.1:3128", "--unsafe-requests", "sometimes"}),
                      Catch::Contains("replay, withhold or send"));
}

TEST_CASE("how far the client and the proxies may run ahead of SPE: flags, today's bounds by default") {
    auto c = parse({"--collector", "h:1"});
    REQUIRE(c);
    CHECK(c->max_fanout_backlog == 64);
    CHECK(c->max_queued_legs == 1024);
    CHECK_FALSE(c->turn_timeout);  // --timeout and a second (client_hold_bound)
    CHECK(c->order_wait == std::chrono::seconds(2));
    c = parse({"--collector", "h:1", "--max-fanout-backlog", "0", "--max-queued-legs", "3", "--turn-timeout", "1500ms",
               "--order-wait", "250ms"});
    REQUIRE(c);
    CHECK(c->max_fanout_backlog == 0);
    CHECK(c->max_queued_legs == 3);
    CHECK(c->turn_timeout == std::chrono::milliseconds(1500));
    CHECK(c->order_wait == std::chrono::milliseconds(250));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--order-wait", "0"}), Catch::Contains("more than 0"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--turn-timeout", "soon"}), Catch::Contains("expected a duration"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--max-queued-legs", "many"}), Catch::Contains("max-queued-legs"));
}

TEST_CASE("the leaf validity flag: 30 days by default; duration forms; at least 1s; only with interception") {
    using namespace std::chrono_literals;
    auto c = parse({"--collector", "h:1", "--intercept-tls"});
    REQUIRE(c);
    CHECK(c->leaf_validity == std::chrono::hours(24 * 30));
    for (auto [text, expected] : {std::pair{"2s", 2s}, std::pair{"10m", 600s}, std::pair{"1h", 3600s},
                                  std::pair{"90", 90s}, std::pair{"1500ms", 1s}}) {
        auto v = parse({"--collector", "h:1", "--intercept-tls", "--leaf-validity", text});
        REQUIRE(v);
        CHECK(v->leaf_validity == expected);
    }
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--intercept-tls", "--leaf-validity", "500ms"}),
                      Catch::Contains("at least 1s"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--intercept-tls", "--leaf-validity", "2d"}),
                      Catch::Contains("expected a duration"));
    CHECK_THROWS_WITH(parse({"--collector", "h:1", "--leaf-validity", "2s"}),
                      Catch::Contains("only apply with --intercept-tls"));
}

namespace {
constexpr const char* kCollector = "127.0.0.1:3128";

/// The other flags a flag needs to be accepted at all.
std::vector<std::string> needed_by(const std::string& flag) {
    if (flag == "ca-dir" || flag == "no-intercept" || flag == "leaf-validity")
        return {"--collector", kCollector, "--intercept-tls"};
    if (flag == "parent") return {"--dummy"};
    if (flag == "dummy") return {"--parent", kCollector};
    if (flag == "collector") return {};
    return {"--collector", kCollector};
}

/// The config the flag's example is compared with: the same command line without it (or, for a flag
/// that must be given, with another value).
spe::Config baseline_for(const std::string& flag) {
    if (flag == "parent") return *parse({"--dummy", "--parent", kCollector});
    if (flag == "dummy") return *parse({"--collector", kCollector});
    if (flag == "collector") return *parse({"--collector", kCollector});
    return *parse(needed_by(flag));
}
}  // namespace

TEST_CASE("parsing every flag of the table sets the Config field it names") {
    for (const auto& flag : spe::flag_table()) {
        if (flag.field.empty()) {  // only the actions and --config set no field
            CHECK((flag.kind == spe::FlagKind::action || flag.name == "config"));
            continue;
        }
        INFO("--" << flag.name << " " << flag.example << " (sets " << flag.field << ")");
        auto args = needed_by(flag.name);
        args.push_back("--" + flag.name);
        if (flag.takes_value()) {
            REQUIRE_FALSE(flag.example.empty());
            args.push_back(flag.example);
        }
        const auto with_flag = parse(args);
        REQUIRE(with_flag);
        CHECK(flag.differs(*with_flag, baseline_for(flag.name)));
    }
}

TEST_CASE("a number flag's default is what the Config holds when it is not given") {
    const auto c = parse({"--collector", kCollector});
    REQUIRE(c);
    for (const auto& flag : spe::flag_table()) {
        if (flag.kind != spe::FlagKind::number) continue;
        INFO("--" << flag.name);
        auto args = std::vector<std::string>{"--collector", kCollector, "--" + flag.name, flag.default_text};
        const auto explicit_default = parse(args);
        REQUIRE(explicit_default);
        CHECK_FALSE(flag.differs(*explicit_default, *c));
    }
}

TEST_CASE("the actions need no other flag; --check validates as a start would") {
    auto action = [](std::vector<std::string> args) { return command(std::move(args)).action; };
    CHECK(action({"--help"}) == spe::Action::help);
    CHECK(action({"-h"}) == spe::Action::help);
    CHECK(action({"--version"}) == spe::Action::version);
    CHECK(action({"--list-flags"}) == spe::Action::list_flags);
    CHECK(action({"--check", "--collector", kCollector}) == spe::Action::check);
    CHECK_THROWS_WITH(action({"--check"}), Catch::Contains("--collector HOST:PORT is required"));
    CHECK_THAT(spe::help_text(), Catch::Contains("--list-flags") && Catch::Contains("--max-conns-per-proxy arg (=16)"));
}

TEST_CASE("the metrics listener is off by default, loopback-only unless --metrics-allow, never the proxy's port") {
    auto plain = parse({"--collector", "127.0.0.1:3128"});
    REQUIRE(plain);
    CHECK(!plain->metrics_listen);
    auto on = parse({"--collector", "127.0.0.1:3128", "--metrics-listen", "127.0.0.1:9464"});
    REQUIRE(on);
    REQUIRE(on->metrics_listen);
    CHECK(on->metrics_listen->port == 9464);
    CHECK(on->metrics_allow.allows(boost::asio::ip::make_address("127.0.0.2")));
    CHECK(on->metrics_allow.allows(boost::asio::ip::make_address("::1")));
    CHECK(!on->metrics_allow.allows(boost::asio::ip::make_address("10.1.2.3")));
    CHECK(!on->metrics_allow.allows(boost::asio::ip::make_address("192.168.0.7")));

    auto allowed =
        parse({"--collector", "127.0.0.1:3128", "--metrics-listen", "0.0.0.0:9464", "--metrics-allow", "10.0.0.0/8"});
    REQUIRE(allowed);
    CHECK(allowed->metrics_allow.allows(boost::asio::ip::make_address("10.1.2.3")));
    CHECK(!allowed->metrics_allow.allows(boost::asio::ip::make_address("127.0.0.1")));  // the list replaces the default

    CHECK_THROWS_AS(
        parse({"--collector", "127.0.0.1:3128", "--listen", "127.0.0.1:8080", "--metrics-listen", "127.0.0.1:8080"}),
        spe::ConfigError);
    CHECK_THROWS_AS(parse({"--collector", "127.0.0.1:3128", "--metrics-listen", "127.0.0.1:9464", "--proxy",
                           "collector=127.0.0.1:3129"}),
                    spe::ConfigError);
    CHECK_THROWS_AS(
        parse({"--collector", "127.0.0.1:3128", "--metrics-listen", "127.0.0.1:9464", "--metrics-allow", "not-a-cidr"}),
        spe::ConfigError);
}
