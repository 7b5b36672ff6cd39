#include "core/flag_table.hpp"
#include "core/cpu_placement.hpp"

#include <boost/program_options/value_semantic.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

namespace spe {
namespace po = boost::program_options;
namespace {

template <class T>
struct is_list : std::false_type {};
template <class T>
struct is_list<std::vector<T>> : std::true_type {};

template <auto Member>
bool member_differs(const Config& a, const Config& b) {
    return !(a.*Member == b.*Member);
}

/// What a flag of value type T is, as the table shows it.
template <class T>
constexpr FlagKind kind_of() {
    if constexpr (std::is_same_v<T, bool>) return FlagKind::on_off;
    if constexpr (std::is_same_v<T, std::string>) return FlagKind::text;
    if constexpr (is_list<T>::value) return FlagKind::list;
    return FlagKind::number;
}

/// The program_options value of a flag of type T.
template <class T>
po::value_semantic* semantic_of(const std::optional<T>& default_value) {
    if constexpr (std::is_same_v<T, bool>) {
        return po::bool_switch();
    } else {
        auto* v = po::value<T>();
        if constexpr (is_list<T>::value)
            v->composing();  // a list has no default: its absence means one (in the help text)
        else if (default_value)
            v->default_value(*default_value);
        return v;
    }
}

/// A flag whose value (program_options type T) sets the Config member `Member` (named `field`) through `apply`.
template <class T, auto Member>
Flag flag(std::string name, std::string field, std::optional<T> default_value, std::string help, std::string example,
          void (*apply)(Config&, const T&)) {
    Flag f;
    f.name = std::move(name);
    f.kind = kind_of<T>();
    if constexpr (std::is_same_v<T, std::string>) {
        if (default_value) f.default_text = *default_value;
    } else if constexpr (!is_list<T>::value && !std::is_same_v<T, bool>) {
        if (default_value) f.default_text = std::to_string(*default_value);
    }
    f.help = std::move(help);
    f.field = std::move(field);
    f.example = std::move(example);
    f.semantic = [default_value] { return semantic_of<T>(default_value); };
    f.set = [apply](Config& c, const po::variable_value& v) { apply(c, v.as<T>()); };
    f.differs = member_differs<Member>;
    return f;
}

/// A flag whose value is the Config member's value as it is.
template <class T, auto Member>
Flag plain(std::string name, std::string field, std::optional<T> default_value, std::string help, std::string example) {
    auto f =
        flag<T, Member>(std::move(name), std::move(field), default_value, std::move(help), std::move(example), nullptr);
    f.set = [](Config& c, const po::variable_value& v) { c.*Member = v.as<T>(); };
    return f;
}

/// The CIDR blocks of an allow-list flag, a bad one named as the user's mistake.
void add_blocks(AllowList& list, const std::vector<std::string>& cidrs, std::string_view flag_name) {
    for (const auto& cidr : cidrs) {
        try {
            list.add(cidr);
        } catch (const std::invalid_argument& e) {
            throw ConfigError(std::string(flag_name) + ": " + e.what());
        }
    }
}

Flag action(std::string name, char short_name, Action what, std::string help) {
    Flag f;
    f.name = std::move(name);
    f.short_name = short_name;
    f.kind = FlagKind::action;
    f.action = what;
    f.help = std::move(help);
    return f;
}

/// The value of a flag that is one of a few words ("--mode must be sequential or concurrent").
template <class Enum, std::size_t N>
Enum one_of(std::string_view flag, const std::string& value, const std::pair<std::string_view, Enum> (&words)[N]) {
    for (const auto& [word, result] : words)
        if (value == word) return result;
    std::string choices;
    for (std::size_t i = 0; i < N; ++i)
        choices += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(words[i].first);
    throw ConfigError("--" + std::string(flag) + " must be " + choices + ", got '" + value + "'");
}

using Strings = std::vector<std::string>;
using std::nullopt;

std::vector<Flag> make_table() {
    std::vector<Flag> t;
    t.push_back(action("help", 'h', Action::help, "print this help and exit"));
    Flag config;
    config.name = "config";
    config.help = "read options from FILE ('key = value' lines, same keys as the flags; flags win)";
    config.example = "spe.conf";
    config.semantic = [] { return po::value<std::string>(); };
    t.push_back(std::move(config));
    t.push_back(flag<std::string, &Config::listen>(
        "listen", "listen", "127.0.0.1:8080",
        "HOST:PORT the clients (browsers, load generators) use as their HTTP proxy", "127.0.0.1:9090",
        [](Config& c, const std::string& v) { c.listen = parse_endpoint(v); }));
    t.push_back(flag<std::string, &Config::collector>(
        "collector", "collector", nullopt, "HOST:PORT of the Collector: every client request is answered from it",
        "127.0.0.1:3129", [](Config& c, const std::string& v) { c.collector = parse_endpoint(v); }));
    t.push_back(flag<Strings, &Config::proxies>(
        "proxy", "proxies", nullopt, "NAME=HOST:PORT of a proxy under test (repeat for each proxy)",
        "squid=127.0.0.1:3130", [](Config& c, const Strings& v) {
            for (const auto& p : v) {
                auto target = parse_proxy_target(p);
                for (const auto& existing : c.proxies)
                    if (existing.name == target.name)
                        throw ConfigError("proxy name '" + target.name + "' is used twice");
                c.proxies.push_back(target);
            }
        }));
    t.push_back(flag<std::string, &Config::mode>(
        "mode", "mode", "sequential",
        "sequential: proxies get the request after the Collector's reply is complete (ROPE's order); concurrent: at "
        "the same time (for a Collector with collapsed forwarding)",
        "concurrent", [](Config& c, const std::string& v) {
            c.mode = one_of<FanoutMode>(
                "mode", v, {{"sequential", FanoutMode::sequential}, {"concurrent", FanoutMode::concurrent}});
        }));
    t.push_back(flag<std::string, &Config::legs>(
        "legs", "legs", "parallel",
        "parallel: every proxy gets the request at once (ROPE); serial: one after the other, each when the previous "
        "one has answered, so that on a shared machine a proxy's measure does not include waiting for the other "
        "proxies' work, at the cost of a fan-out as long as its legs together",
        "serial", [](Config& c, const std::string& v) {
            c.legs = one_of<LegOrder>("legs", v, {{"parallel", LegOrder::parallel}, {"serial", LegOrder::serial}});
        }));
    t.push_back(flag<std::string, &Config::order>(
        "order", "order", "client",
        "client: a request that arrives after the client had the whole reply to an earlier one reaches each proxy "
        "after that proxy answered the earlier one, whatever connections they came on (a client is an address, or "
        "an address and the value of the X-SPE-Client header its requests carry); connection: each proxy keeps "
        "only each client connection's order",
        "connection", [](Config& c, const std::string& v) {
            c.order = one_of<OrderScope>("order", v,
                                         {{"client", OrderScope::client}, {"connection", OrderScope::connection}});
        }));
    t.push_back(flag<std::string, &Config::timeout>(
        "timeout", "timeout", "30",
        "time a proxy under test has for its whole reply (500ms, 2s, 10m, 1h; a bare number is seconds)", "2s",
        [](Config& c, const std::string& v) { c.timeout = parse_duration(v); }));
    t.push_back(flag<std::string, &Config::client_timeout>(
        "client-timeout", "client_timeout", "60",
        "client or Collector inactivity before a connection is closed (a duration, as --timeout)", "2s",
        [](Config& c, const std::string& v) { c.client_timeout = parse_duration(v); }));
    t.push_back(flag<std::string, &Config::drain_timeout>(
        "drain-timeout", "drain_timeout", "10",
        "time SIGINT/SIGTERM waits for in-flight requests before aborting them, which are still logged", "2s",
        [](Config& c, const std::string& v) { c.drain_timeout = parse_duration(v); }));
    t.push_back(plain<std::string, &Config::log_path>("log", "log_path", nullopt,
                                                      "write one JSON object per client request to FILE (JSON Lines)",
                                                      "multiplier.jsonl"));
    t.push_back(plain<std::string, &Config::rope_log_path>("rope-log", "rope_log_path", nullopt,
                                                           "also write ROPE's text log (one line per proxy) to FILE",
                                                           "multiplier.rope.log"));
    t.push_back(flag<std::string, &Config::name>(
        "name", "name", nullopt,
        "NAME of this Multiplier, in every record (`multiplier`), so that the logs of several Multipliers (one per "
        "client group or host) merged into one report tell them apart: 1 to 64 letters, digits, '.', '_' or '-' "
        "(default: this host's name)",
        "east", [](Config& c, const std::string& v) { c.name = parse_multiplier_name(v); }));
    t.push_back(flag<std::string, &Config::tag_prefix>(
        "tag-prefix", "tag_prefix", nullopt,
        "PREFIX (1 to 16 letters or digits) before every X-SPE-Request tag (PREFIX.RANDOM-ID), for a Collector "
        "shared by several Multipliers: it sends each proxy's unsafe copy to the replay port of the Multiplier whose "
        "prefix it carries (docs/collector.md)",
        "east", [](Config& c, const std::string& v) { c.tag_prefix = parse_tag_prefix(v); }));
    t.push_back(plain<std::string, &Config::capture_dir>(
        "capture-dir", "capture_dir", nullopt,
        "save both replies' headers and first body bytes of every mismatch in DIR (Cookie, Set-Cookie, "
        "Authorization and Proxy-Authorization values written as a keyed digest, hmac:..., equal for equal values "
        "within one run)",
        "captures"));
    t.push_back(plain<bool, &Config::capture_secrets>(
        "capture-secrets", "capture_secrets", nullopt,
        "write the Cookie, Set-Cookie, Authorization and Proxy-Authorization values into the captures as received: "
        "the captures then hold users' cookies and credentials (a warning at start says so)",
        ""));
    t.push_back(plain<std::uint64_t, &Config::reference_bytes>(
        "reference-bytes", "reference_bytes", 64ull << 20,
        "memory for the Collector's bodies kept while they are relayed (hashed once the client has them) and "
        "while their fan-outs run (sequential mode: each proxy's body is compared with it and hashed only when "
        "it differs, the same MD5); one body takes at most a quarter; a body that does not fit is hashed as it "
        "passes, and by every leg; 0: every body hashed",
        "1000000"));
    t.push_back(plain<std::uint64_t, &Config::capture_max_bytes>("capture-max-bytes", "capture_max_bytes", 100ull << 20,
                                                                 "stop capturing once DIR holds this many bytes",
                                                                 "1000"));
    t.push_back(plain<std::size_t, &Config::capture_body_bytes>("capture-body-bytes", "capture_body_bytes", 4096,
                                                                "body bytes kept per reply in a capture", "100"));
    t.push_back(plain<std::uint64_t, &Config::log_queue_bytes>(
        "log-queue-bytes", "log_queue_bytes", 64ull << 20,
        "records waiting for the disk at most (formatted bytes); when the disk falls further behind, records are "
        "dropped and the count is in the final log line",
        "1000000"));
    t.push_back(flag<Strings, &Config::allow>(
        "allow", "allow", nullopt, "CIDR block of allowed clients (repeatable; default 127.0.0.0/8 and ::1)",
        "10.0.0.0/8", [](Config& c, const Strings& v) { add_blocks(c.allow, v, "--allow"); }));
    t.push_back(flag<std::string, &Config::metrics_listen>(
        "metrics-listen", "metrics_listen", nullopt,
        "HOST:PORT where GET /metrics answers the live counters in the Prometheus text format (docs/metrics.md); "
        "off by default; never the --listen port",
        "127.0.0.1:9464", [](Config& c, const std::string& v) { c.metrics_listen = parse_endpoint(v); }));
    t.push_back(flag<Strings, &Config::metrics_allow>(
        "metrics-allow", "metrics_allow", nullopt,
        "CIDR block of clients allowed to scrape --metrics-listen (repeatable; default 127.0.0.0/8 and ::1); "
        "others have their connection closed",
        "10.0.0.0/8", [](Config& c, const Strings& v) { add_blocks(c.metrics_allow, v, "--metrics-allow"); }));
    t.push_back(flag<std::vector<unsigned>, &Config::connect_ports>(
        "connect-port", "connect_ports", nullopt,
        "port CONNECT may tunnel to (repeatable; default 443). A CONNECT target must be host:port, IPv4:port or "
        "[IPv6]:port (RFC 9110 9.3.6); anything else is refused with 400",
        "8443", [](Config& c, const std::vector<unsigned>& v) {
            c.connect_ports.clear();
            for (unsigned p : v) {
                if (p == 0 || p > 65535) throw ConfigError("--connect-port out of range: " + std::to_string(p));
                c.connect_ports.push_back(static_cast<std::uint16_t>(p));
            }
        }));
    t.push_back(flag<std::string, &Config::unsafe_requests>(
        "unsafe-requests", "unsafe_requests", nullopt,
        "what the proxies get of an unsafe request (a method other than GET, HEAD, OPTIONS, TRACE): replay (the "
        "default with --replay-listen): sent, and the Collector must route their copies to --replay-listen, "
        "which answers each from the client's own reply, so the origin gets the request once; withhold (the "
        "default without it): not sent, each leg recorded NOT_SENT; send: sent with nothing to stop each copy "
        "reaching the origin (only for a synthetic origin)",
        "send", [](Config& c, const std::string& v) {
            c.unsafe_requests = one_of<UnsafeRequests>("unsafe-requests", v,
                                                       {{"replay", UnsafeRequests::replay},
                                                        {"withhold", UnsafeRequests::withhold},
                                                        {"send", UnsafeRequests::send}});
        }));
    t.push_back(flag<std::string, &Config::replay_listen>(
        "replay-listen", "replay_listen", nullopt,
        "HOST:PORT where the Collector sends the proxies' copies of unsafe requests (its template routes them "
        "there): each is answered from the reply the client got, or refused with 502 and X-SPE-Replay-Refused",
        "127.0.0.1:3131", [](Config& c, const std::string& v) { c.replay_listen = parse_endpoint(v); }));
    t.push_back(flag<std::string, &Config::replay_ttl>(
        "replay-ttl", "replay_ttl", "180",
        "how long a client's reply to an unsafe request is kept for the proxies' copies (a duration)", "60",
        [](Config& c, const std::string& v) { c.replay_ttl = parse_duration(v); }));
    t.push_back(plain<std::uint64_t, &Config::replay_store_bytes>(
        "replay-store-bytes", "replay_store_bytes", 256ull << 20,
        "bodies of kept replies to unsafe requests, together, at most (the oldest go first; a reply larger "
        "than this is not kept, and the proxies' copies are refused)",
        "1000"));
    t.push_back(plain<bool, &Config::intercept_tls>(
        "intercept-tls", "intercept_tls", nullopt,
        "read HTTPS inside CONNECT tunnels: answer the client's TLS with a certificate signed by SPE's CA (see "
        "--ca-dir) and treat each request in it like a plain HTTP one (Collector, fan-out, record)",
        ""));
    t.push_back(plain<std::string, &Config::ca_dir>(
        "ca-dir", "ca_dir", nullopt,
        "directory of SPE's CA, spe-ca.pem and spe-ca.key (default $SPE_CA_DIR, else "
        "$XDG_DATA_HOME/spe/ca, else ~/.local/share/spe/ca; ./spe ca creates it)",
        "ca"));
    t.push_back(plain<Strings, &Config::no_intercept>(
        "no-intercept", "no_intercept", nullopt,
        "with --intercept-tls, tunnel unread the CONNECTs whose host, or whose TLS SNI (read from the ClientHello "
        "before deciding), matches this pattern ('*.example.com'; repeatable)",
        "*.example.com"));
    t.push_back(flag<std::string, &Config::leaf_validity>(
        "leaf-validity", "leaf_validity", nullopt,
        "with --intercept-tls, how long each leaf certificate is valid when made (default 30 days; a duration as "
        "--timeout, at least 1s and at most 24h, for tests); a cached leaf is renewed once less than a third of its "
        "validity remains",
        "1h", [](Config& c, const std::string& v) {
            const auto validity = parse_duration(v);
            if (validity < std::chrono::seconds(1)) throw ConfigError("--leaf-validity must be at least 1s");
            c.leaf_validity = std::chrono::duration_cast<std::chrono::seconds>(validity);
        }));
    t.push_back(plain<Strings, &Config::compare_headers>(
        "compare-header", "compare_headers", nullopt,
        "compare only these headers (repeatable; default: all end-to-end headers not ignored)", "etag"));
    t.push_back(plain<Strings, &Config::ignore_headers>(
        "ignore-header", "ignore_headers", nullopt,
        "never compare this header (repeatable, added to the default list; 'X-Foo*' matches a prefix)", "x-trace*"));
    t.push_back(plain<std::size_t, &Config::max_header_bytes>(
        "max-header-bytes", "max_header_bytes", 64 * 1024, "largest request or reply header block accepted", "2048"));
    t.push_back(plain<std::uint64_t, &Config::max_request_body>(
        "max-request-body", "max_request_body", 64ull << 20,
        "largest client request body accepted (it is kept to replay to each proxy)", "1000"));
    t.push_back(plain<std::uint64_t, &Config::max_proxy_body>(
        "max-proxy-body", "max_proxy_body", 1ull << 30,
        "largest proxy reply body read in concurrent mode (sequential mode stops at the Collector's length)", "1000"));
    t.push_back(plain<std::size_t, &Config::max_conns_per_proxy>(
        "max-conns-per-proxy", "max_conns_per_proxy", 16,
        "connections one client connection may hold to each proxy at once", "4"));
    t.push_back(plain<std::uint64_t, &Config::max_fanout_backlog>(
        "max-fanout-backlog", "max_fanout_backlog", 64,
        "fan-outs of one client connection SPE's measuring (validation, the judge, the record) may be behind the "
        "client: past that the client's next request is read only once it has caught up, at most --turn-timeout "
        "later (a hold, in the record as client_held_us); bounds what a client faster than SPE measures can make "
        "it hold; 0: the client never runs ahead of the measuring",
        "8"));
    t.push_back(plain<std::uint64_t, &Config::max_queued_legs>(
        "max-queued-legs", "max_queued_legs", 1024,
        "legs of one client connection that may wait for one proxy's turn (a proxy gets a connection's requests one "
        "at a time, in order, each leg waiting --order-wait at most): a leg behind more is not sent (NO_RESPONSE, "
        "busy). A bound on memory that only a burst faster than this many per --order-wait reaches",
        "8"));
    t.push_back(flag<std::string, &Config::order_wait>(
        "order-wait", "order_wait", "2s",
        "the longest a leg waits for its proxy to answer the client's earlier requests (this connection's, and "
        "those on its other connections whose reply the client had): then it sets them aside and goes on another "
        "connection to that proxy, recorded (overtook); the requests set aside keep their own --timeout. A duration, "
        "as --timeout",
        "500ms", [](Config& c, const std::string& v) { c.order_wait = parse_duration(v); }));
    t.push_back(flag<std::string, &Config::turn_timeout>(
        "turn-timeout", "turn_timeout", nullopt,
        "the longest a client is held while SPE's measuring catches up (--max-fanout-backlog). Default: --timeout "
        "and 1s, times the number of proxies with --legs serial (a duration, as --timeout)",
        "5s", [](Config& c, const std::string& v) { c.turn_timeout = parse_duration(v); }));
    t.push_back(plain<unsigned, &Config::threads>("threads", "threads", 1u,
                                                  "I/O threads for the clients and the Collector", "2"));
    t.push_back(flag<std::string, &Config::fanout_threads>(
        "fanout-threads", "fanout_threads", "auto",
        "I/O threads for the proxies under test, apart from the clients' threads so that fan-out work never "
        "delays a client's reply; 0: on the clients' threads (less CPU per request, no such isolation); auto: 1 "
        "when the process may run on two CPUs or more (its CPU affinity), else 0 (on one CPU a thread isolates "
        "nothing and costs a hand-over per request)",
        "2", [](Config& c, const std::string& v) { c.fanout_threads = parse_fanout_threads(v); }));
    t.push_back(plain<std::string, &Config::via_name>(
        "via-name", "via_name", nullopt,
        "pseudonym in the Via header, also used to detect loops (default spe-multiplier-<listen port>, unique per "
        "instance so chained Multipliers, e.g. a --dummy proxy under test, are not mistaken for a loop)",
        "spe-test"));
    t.push_back(plain<std::string, &Config::log_level>(
        "log-level", "log_level", "info", "diagnostics on stderr: trace, debug, info, warn, error, off", "debug"));
    t.push_back(flag<bool, &Config::cache_judge>(
        "no-cache-judge", "cache_judge", nullopt,
        "do not judge reused replies against RFC 9111's caching rules (no `cache` object in the records)", "",
        [](Config& c, const bool& v) { c.cache_judge = !v; }));
    t.push_back(plain<bool, &Config::client_fetch_stamp>(
        "client-fetch-stamp", "client_fetch_stamp", nullopt,
        "keep the Collector's X-SPE-Fetch, X-SPE-Validated, X-SPE-Reply-To and X-SPE-Parent headers (which origin "
        "fetch a reply came from, when the origin last confirmed it, which client request fetched it, what the "
        "Collector sent) in the replies to "
        "the clients; by default they are kept from them",
        ""));
    t.push_back(plain<bool, &Config::dummy>(
        "dummy", "dummy", nullopt, "run as ROPE's dummy proxy: pass every request to --parent, no fan-out", ""));
    t.push_back(flag<std::string, &Config::collector>(
        "parent", "collector", nullopt, "HOST:PORT of the parent in --dummy mode", "127.0.0.1:3132",
        [](Config& c, const std::string& v) { c.collector = parse_endpoint(v); }));
    t.push_back(action("version", 0, Action::version, "print the version and exit"));
    t.push_back(action("list-flags", 0, Action::list_flags,
                       "print this table of flags as JSON (name, takes_value, kind, default, help, the Config field it "
                       "sets, an example value) and exit"));
    t.push_back(action("list-cache-rules", 0, Action::list_cache_rules,
                       "print the cache-rule judge's catalogue of rules as JSON (id, RFC section, violation or "
                       "advisory, what breaking it means) and exit"));
    t.push_back(action("check", 0, Action::check,
                       "check the other options (and --config FILE) as a start would, then exit: 0 when they are "
                       "valid, else the message and 2"));
    return t;
}

const char* kind_name(FlagKind k) {
    switch (k) {
        case FlagKind::action:
            return "action";
        case FlagKind::on_off:
            return "switch";
        case FlagKind::text:
            return "text";
        case FlagKind::number:
            return "number";
        case FlagKind::list:
            return "list";
    }
    return "text";
}

}  // namespace

const std::vector<Flag>& flag_table() {
    static const std::vector<Flag> table = make_table();
    return table;
}

po::options_description describe_flags() {
    po::options_description o("spe-multiplier options (each also works as 'key = value' in --config FILE)");
    for (const auto& f : flag_table()) {
        const auto spelled = f.short_name ? f.name + "," + f.short_name : f.name;
        if (f.semantic)
            o.add_options()(spelled.c_str(), f.semantic(), f.help.c_str());
        else
            o.add_options()(spelled.c_str(), f.help.c_str());
    }
    return o;
}

std::string flag_table_json() {
    auto out = nlohmann::json::array();
    for (const auto& f : flag_table()) {
        auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
        out.push_back({{"name", f.name},
                       {"takes_value", f.takes_value()},
                       {"kind", kind_name(f.kind)},
                       {"default", text_or_null(f.default_text)},
                       {"help", f.help},
                       {"field", text_or_null(f.field)},
                       {"example", text_or_null(f.example)}});
    }
    return out.dump(2);
}

}  // namespace spe
