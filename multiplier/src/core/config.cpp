#include "core/config.hpp"

#include <boost/program_options.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>

namespace spe {
namespace po = boost::program_options;

std::string Endpoint::to_string() const {
    return host.find(':') != std::string::npos ? "[" + host + "]:" + std::to_string(port)
                                               : host + ":" + std::to_string(port);
}

Endpoint parse_endpoint(const std::string& text) {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        throw ConfigError("expected HOST:PORT, got '" + text + "'");
    std::string host = text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    unsigned long port = 0;
    try {
        std::size_t used = 0;
        port = std::stoul(text.substr(colon + 1), &used);
        if (used != text.size() - colon - 1) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
        throw ConfigError("bad port in '" + text + "'");
    }
    if (port == 0 || port > 65535) throw ConfigError("port out of range in '" + text + "'");
    return {host, static_cast<std::uint16_t>(port)};
}

ProxyTarget parse_proxy_target(const std::string& text) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("expected NAME=HOST:PORT, got '" + text + "'");
    auto name = text.substr(0, eq);
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            throw ConfigError("proxy name '" + name + "' may only use letters, digits, '-', '_' and '.'");
    return {name, parse_endpoint(text.substr(eq + 1))};
}

namespace {

/// Milliseconds per unit of a duration's suffix; a bare number is seconds.
double unit_ms(std::string_view suffix) {
    if (suffix.empty() || suffix == "s") return 1000;
    if (suffix == "ms") return 1;
    if (suffix == "m") return 60'000;
    if (suffix == "h") return 3'600'000;
    return 0;
}

}  // namespace

// The one duration syntax of every flag and config key (README.md, "A 5-minute tour"): 500ms, 2s, 10m, 1h, 2.5.
std::chrono::milliseconds parse_duration(const std::string& text) {
    const auto bad = [&text] {
        return ConfigError("expected a duration: 500ms, 2s, 10m, 1h or a number of seconds, got '" + text + "'");
    };
    double number = 0;
    std::size_t used = 0;
    try {
        number = std::stod(text, &used);
    } catch (const std::exception&) {
        throw bad();
    }
    const double ms = number * unit_ms(std::string_view(text).substr(used));
    if (ms == 0 && number != 0) throw bad();  // an unknown suffix
    if (!std::isfinite(ms) || ms <= 0 || ms > 86'400'000)
        throw ConfigError("a duration must be more than 0 and at most 86400 seconds (24h), got '" + text + "'");
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

namespace {

po::options_description describe_options() {
    po::options_description o("spe-multiplier options (each also works as 'key = value' in --config FILE)");
    o.add_options()("help,h", "print this help and exit")(
        "config", po::value<std::string>(),
        "read options from FILE ('key = value' lines, same keys as the flags; flags win)")(
        "listen", po::value<std::string>()->default_value("127.0.0.1:8080"),
        "HOST:PORT the clients (browsers, load generators) use as their HTTP proxy")(
        "collector", po::value<std::string>(), "HOST:PORT of the Collector: every client request is answered from it")(
        "proxy", po::value<std::vector<std::string>>()->composing(),
        "NAME=HOST:PORT of a proxy under test (repeat for each proxy)")(
        "mode", po::value<std::string>()->default_value("sequential"),
        "sequential: proxies get the request after the Collector's reply is complete (ROPE's order); concurrent: at "
        "the same time (for a Collector with collapsed forwarding)")(
        "legs", po::value<std::string>()->default_value("parallel"),
        "parallel: every proxy gets the request at once (ROPE); serial: one after the other, each when the previous "
        "one has answered, so that on a shared machine a proxy's measure does not include waiting for the other "
        "proxies' work, at the cost of a fan-out as long as its legs together")(
        "timeout", po::value<std::string>()->default_value("30"),
        "time a proxy under test has for its whole reply (500ms, 2s, 10m, 1h; a bare number is seconds)")(
        "client-timeout", po::value<std::string>()->default_value("60"),
        "client or Collector inactivity before a connection is closed (a duration, as --timeout)")(
        "drain-timeout", po::value<std::string>()->default_value("10"),
        "time SIGINT/SIGTERM waits for in-flight requests before aborting them, which are still logged")(
        "log", po::value<std::string>(), "write one JSON object per client request to FILE (JSON Lines)")(
        "rope-log", po::value<std::string>(), "also write ROPE's text log (one line per proxy) to FILE")(
        "capture-dir", po::value<std::string>(),
        "save both replies' headers and first body bytes of every mismatch in DIR (Cookie, Set-Cookie, "
        "Authorization and Proxy-Authorization values written as a keyed digest, hmac:..., equal for equal values "
        "within one run)")(
        "capture-secrets", po::bool_switch(),
        "write the Cookie, Set-Cookie, Authorization and Proxy-Authorization values into the captures as received: "
        "the captures then hold users' cookies and credentials (a warning at start says so)")(
        "capture-max-bytes", po::value<std::uint64_t>()->default_value(100ull << 20),
        "stop capturing once DIR holds this many bytes")(
        "capture-body-bytes", po::value<std::size_t>()->default_value(4096), "body bytes kept per reply in a capture")(
        "log-queue-bytes", po::value<std::uint64_t>()->default_value(64ull << 20),
        "records waiting for the disk at most (formatted bytes); when the disk falls further behind, records are "
        "dropped and the count is in the final log line")(
        "allow", po::value<std::vector<std::string>>()->composing(),
        "CIDR block of allowed clients (repeatable; default 127.0.0.0/8 and ::1)")(
        "connect-port", po::value<std::vector<unsigned>>()->composing(),
        "port CONNECT may tunnel to (repeatable; default 443). A CONNECT target must be host:port, IPv4:port or "
        "[IPv6]:port (RFC 9110 9.3.6); anything else is refused with 400")(
        "unsafe-requests", po::value<std::string>(),
        "what the proxies get of an unsafe request (a method other than GET, HEAD, OPTIONS, TRACE): replay (the "
        "default with --replay-listen): sent, and the Collector must route their copies to --replay-listen, "
        "which answers each from the client's own reply, so the origin gets the request once; withhold (the "
        "default without it): not sent, each leg recorded NOT_SENT; send: sent with nothing to stop each copy "
        "reaching the origin (only for a synthetic origin)")(
        "replay-listen", po::value<std::string>(),
        "HOST:PORT where the Collector sends the proxies' copies of unsafe requests (its template routes them "
        "there): each is answered from the reply the client got, or refused with 502 and X-SPE-Replay-Refused")(
        "replay-ttl", po::value<std::string>()->default_value("180"),
        "how long a client's reply to an unsafe request is kept for the proxies' copies (a duration)")(
        "replay-store-bytes", po::value<std::uint64_t>()->default_value(256ull << 20),
        "bodies of kept replies to unsafe requests, together, at most (the oldest go first; a reply larger "
        "than this is not kept, and the proxies' copies are refused)")(
        "intercept-tls", po::bool_switch(),
        "read HTTPS inside CONNECT tunnels: answer the client's TLS with a certificate signed by SPE's CA (see "
        "--ca-dir) and treat each request in it like a plain HTTP one (Collector, fan-out, record)")(
        "ca-dir", po::value<std::string>(),
        "directory of SPE's CA, spe-ca.pem and spe-ca.key (default $SPE_CA_DIR, else "
        "$XDG_DATA_HOME/spe/ca, else ~/.local/share/spe/ca; ./spe ca creates it)")(
        "no-intercept", po::value<std::vector<std::string>>()->composing(),
        "with --intercept-tls, tunnel unread the CONNECTs whose host, or whose TLS SNI (read from the ClientHello "
        "before deciding), matches this pattern ('*.example.com'; repeatable)")(
        "leaf-validity", po::value<std::string>(),
        "with --intercept-tls, how long each leaf certificate is valid when made (default 30 days; a duration as "
        "--timeout, at least 1s and at most 24h, for tests); a cached leaf is renewed once less than a third of its "
        "validity remains")("compare-header", po::value<std::vector<std::string>>()->composing(),
                            "compare only these headers (repeatable; default: all end-to-end headers not ignored)")(
        "ignore-header", po::value<std::vector<std::string>>()->composing(),
        "never compare this header (repeatable, added to the default list; 'X-Foo*' matches a prefix)")(
        "max-header-bytes", po::value<std::size_t>()->default_value(64 * 1024),
        "largest request or reply header block accepted")(
        "max-request-body", po::value<std::uint64_t>()->default_value(64ull << 20),
        "largest client request body accepted (it is kept to replay to each proxy)")(
        "max-proxy-body", po::value<std::uint64_t>()->default_value(1ull << 30),
        "largest proxy reply body read in concurrent mode (sequential mode stops at the Collector's length)")(
        "max-conns-per-proxy", po::value<std::size_t>()->default_value(16),
        "connections one client connection may hold to each proxy at once")(
        "threads", po::value<unsigned>()->default_value(1), "I/O threads for the clients and the Collector")(
        "fanout-threads", po::value<unsigned>()->default_value(1),
        "I/O threads for the proxies under test, apart from the clients' threads so that fan-out work never "
        "delays a client's reply; 0: on the clients' threads (less CPU per request, no such isolation)")(
        "via-name", po::value<std::string>(),
        "pseudonym in the Via header, also used to detect loops (default spe-multiplier-<listen port>, unique per "
        "instance so chained Multipliers, e.g. a --dummy proxy under test, are not mistaken for a loop)")(
        "log-level", po::value<std::string>()->default_value("info"),
        "diagnostics on stderr: trace, debug, info, warn, error, off")(
        "no-cache-judge", po::bool_switch(),
        "do not judge reused replies against RFC 9111's caching rules (no `cache` object in the records)")(
        "client-fetch-stamp", po::bool_switch(),
        "keep the Collector's X-SPE-Fetch, X-SPE-Validated, X-SPE-Reply-To and X-SPE-Parent headers (which origin "
        "fetch a reply came from, when the origin last confirmed it, which client request fetched it, what the "
        "Collector sent) in the replies to "
        "the clients; by default they are kept from them")(
        "dummy", po::bool_switch(), "run as ROPE's dummy proxy: pass every request to --parent, no fan-out")(
        "parent", po::value<std::string>(), "HOST:PORT of the parent in --dummy mode")("version",
                                                                                       "print the version and exit");
    return o;
}

/// Where ./spe ca puts the CA (spe_tools/ca.py default_dir: the same rule).
std::string default_ca_dir() {
    if (const char* dir = std::getenv("SPE_CA_DIR"); dir && *dir) return dir;
    if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) return std::string(data) + "/spe/ca";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.local/share/spe/ca";
}

template <class T>
std::vector<T> list_of(const po::variables_map& vm, const char* key) {
    return vm.count(key) ? vm[key].as<std::vector<T>>() : std::vector<T>{};
}

/// The value of an option that is one of a few words ("--mode must be sequential or concurrent").
template <class Enum, std::size_t N>
Enum one_of(const po::variables_map& vm, const char* key, const std::pair<std::string_view, Enum> (&words)[N]) {
    const auto& value = vm[key].as<std::string>();
    for (const auto& [word, result] : words)
        if (value == word) return result;
    std::string choices;
    for (std::size_t i = 0; i < N; ++i)
        choices += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(words[i].first);
    throw ConfigError("--" + std::string(key) + " must be " + choices + ", got '" + value + "'");
}

/// --unsafe-requests and the replay port it needs: the safe choice unless told otherwise.
void set_unsafe_requests(Config& c, const po::variables_map& vm) {
    if (vm.count("replay-listen")) c.replay_listen = parse_endpoint(vm["replay-listen"].as<std::string>());
    c.replay_ttl = parse_duration(vm["replay-ttl"].as<std::string>());
    c.replay_store_bytes = vm["replay-store-bytes"].as<std::uint64_t>();
    c.unsafe_requests = c.replay_listen ? UnsafeRequests::replay : UnsafeRequests::withhold;
    if (vm.count("unsafe-requests"))
        c.unsafe_requests = one_of<UnsafeRequests>(vm, "unsafe-requests",
                                                   {{"replay", UnsafeRequests::replay},
                                                    {"withhold", UnsafeRequests::withhold},
                                                    {"send", UnsafeRequests::send}});
    if (c.unsafe_requests == UnsafeRequests::replay && !c.replay_listen)
        throw ConfigError("--unsafe-requests replay needs --replay-listen HOST:PORT (where the Collector sends them)");
    if (c.dummy && c.replay_listen) throw ConfigError("--replay-listen is for the Multiplier, not a --dummy proxy");
}

Config build_config(const po::variables_map& vm) {
    Config c;
    c.listen = parse_endpoint(vm["listen"].as<std::string>());
    c.dummy = vm["dummy"].as<bool>();
    c.client_fetch_stamp = vm["client-fetch-stamp"].as<bool>();
    c.cache_judge = !vm["no-cache-judge"].as<bool>();
    if (c.dummy) {
        if (!vm.count("parent")) throw ConfigError("--dummy needs --parent HOST:PORT");
        if (vm.count("proxy")) throw ConfigError("--dummy does not fan out: drop the --proxy options");
        c.collector = parse_endpoint(vm["parent"].as<std::string>());
    } else {
        if (vm.count("parent")) throw ConfigError("--parent is only for --dummy mode; use --collector");
        if (!vm.count("collector"))
            throw ConfigError("--collector HOST:PORT is required (or --dummy --parent HOST:PORT)");
        c.collector = parse_endpoint(vm["collector"].as<std::string>());
    }
    for (const auto& p : list_of<std::string>(vm, "proxy")) {
        auto target = parse_proxy_target(p);
        for (const auto& existing : c.proxies)
            if (existing.name == target.name) throw ConfigError("proxy name '" + target.name + "' is used twice");
        c.proxies.push_back(target);
    }
    c.mode = one_of<FanoutMode>(vm, "mode",
                                {{"sequential", FanoutMode::sequential}, {"concurrent", FanoutMode::concurrent}});
    c.legs = one_of<LegOrder>(vm, "legs", {{"parallel", LegOrder::parallel}, {"serial", LegOrder::serial}});

    c.timeout = parse_duration(vm["timeout"].as<std::string>());
    c.client_timeout = parse_duration(vm["client-timeout"].as<std::string>());
    c.drain_timeout = parse_duration(vm["drain-timeout"].as<std::string>());
    if (vm.count("log")) c.log_path = vm["log"].as<std::string>();
    if (vm.count("rope-log")) c.rope_log_path = vm["rope-log"].as<std::string>();
    if (vm.count("capture-dir")) c.capture_dir = vm["capture-dir"].as<std::string>();
    c.capture_max_bytes = vm["capture-max-bytes"].as<std::uint64_t>();
    c.capture_body_bytes = vm["capture-body-bytes"].as<std::size_t>();
    c.capture_secrets = vm["capture-secrets"].as<bool>();
    c.log_queue_bytes = vm["log-queue-bytes"].as<std::uint64_t>();

    auto allow = list_of<std::string>(vm, "allow");
    if (allow.empty()) allow = {"127.0.0.0/8", "::1/128"};
    for (const auto& cidr : allow) {
        try {
            c.allow.add(cidr);
        } catch (const std::invalid_argument& e) {
            throw ConfigError(std::string("--allow: ") + e.what());
        }
    }
    if (vm.count("connect-port")) {
        c.connect_ports.clear();
        for (unsigned p : vm["connect-port"].as<std::vector<unsigned>>()) {
            if (p == 0 || p > 65535) throw ConfigError("--connect-port out of range: " + std::to_string(p));
            c.connect_ports.push_back(static_cast<std::uint16_t>(p));
        }
    }
    set_unsafe_requests(c, vm);
    c.intercept_tls = vm["intercept-tls"].as<bool>();
    c.ca_dir = vm.count("ca-dir") ? vm["ca-dir"].as<std::string>() : default_ca_dir();
    c.no_intercept = list_of<std::string>(vm, "no-intercept");
    if (c.intercept_tls && c.dummy)
        throw ConfigError("--intercept-tls is for the Multiplier; a --dummy proxy gets intercepted requests as http");
    if (!c.intercept_tls && (vm.count("ca-dir") || !c.no_intercept.empty() || vm.count("leaf-validity")))
        throw ConfigError("--ca-dir, --no-intercept and --leaf-validity only apply with --intercept-tls");
    if (vm.count("leaf-validity")) {
        const auto validity = parse_duration(vm["leaf-validity"].as<std::string>());
        if (validity < std::chrono::seconds(1)) throw ConfigError("--leaf-validity must be at least 1s");
        c.leaf_validity = std::chrono::duration_cast<std::chrono::seconds>(validity);
    }
    c.compare_headers = list_of<std::string>(vm, "compare-header");
    c.ignore_headers = list_of<std::string>(vm, "ignore-header");
    c.max_header_bytes = vm["max-header-bytes"].as<std::size_t>();
    c.max_request_body = vm["max-request-body"].as<std::uint64_t>();
    c.max_proxy_body = vm["max-proxy-body"].as<std::uint64_t>();
    c.max_conns_per_proxy = vm["max-conns-per-proxy"].as<std::size_t>();
    c.threads = vm["threads"].as<unsigned>();
    c.fanout_threads = vm["fanout-threads"].as<unsigned>();
    c.via_name =
        vm.count("via-name") ? vm["via-name"].as<std::string>() : "spe-multiplier-" + std::to_string(c.listen.port);
    c.log_level = vm["log-level"].as<std::string>();
    if (c.max_header_bytes < 1024) throw ConfigError("--max-header-bytes must be at least 1024");
    if (c.max_conns_per_proxy == 0) throw ConfigError("--max-conns-per-proxy must be at least 1");
    if (c.threads == 0 || c.threads > 64) throw ConfigError("--threads must be 1..64");
    if (c.fanout_threads > 64) throw ConfigError("--fanout-threads must be 0..64");
    if (c.via_name.empty() || c.via_name.find_first_of(" ,\r\n") != std::string::npos)
        throw ConfigError("--via-name must be one token without spaces or commas");
    return c;
}

}  // namespace

std::optional<Config> parse_config(int argc, const char* const argv[]) {
    auto options = describe_options();
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        if (vm.count("help")) {
            std::cout << "Usage: spe-multiplier --collector HOST:PORT --proxy NAME=HOST:PORT ... [options]\n"
                         "       spe-multiplier --dummy --parent HOST:PORT [options]\n\n"
                         "SPE's Multiplier: a forward proxy that answers each client request from the\n"
                         "Collector, then sends it to every proxy under test and compares the replies.\n\n"
                      << options << "\n";
            return std::nullopt;
        }
        if (vm.count("version")) {
            std::cout << "spe-multiplier 0.1.0\n";
            return std::nullopt;
        }
        if (vm.count("config")) {
            const auto path = vm["config"].as<std::string>();
            std::ifstream in(path);
            if (!in) throw ConfigError("cannot read config file '" + path + "'");
            po::store(po::parse_config_file(in, options), vm);
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw ConfigError(e.what());
    }
    return build_config(vm);
}

}  // namespace spe
