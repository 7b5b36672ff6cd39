// Typed configuration of the Multiplier: from flags and/or a config file with
// the same keys (each flag, its help and how it sets Config: flag_table.hpp);
// validated once at start so a bad value is a clear message.
#pragma once

#include "core/allow_list.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace spe {

struct Endpoint {
    std::string host;
    std::uint16_t port = 0;
    std::string to_string() const;
    bool operator==(const Endpoint&) const = default;
};

struct ProxyTarget {
    std::string name;
    Endpoint endpoint;
    bool operator==(const ProxyTarget&) const = default;
};

enum class FanoutMode { sequential, concurrent };
/// Whether the proxies get a request all at once or one after the other.
enum class LegOrder { parallel, serial };
/// Whose order each proxy keeps (client_order.hpp): the client's, across its connections (a client is an
/// address, or an address and the X-SPE-Client header's value where its requests carry one), or only each
/// connection's.
enum class OrderScope { client, connection };
/// What becomes of the proxies' copies of an unsafe request (any method but GET, HEAD, OPTIONS, TRACE).
/// replay: sent; the Collector routes them to --replay-listen, which answers each from the client's own
/// reply, so the origin sees the request once. withhold: not sent (no replay port: each copy would reach
/// the origin). send: sent, with nothing to stop them reaching the origin (a synthetic origin only).
enum class UnsafeRequests { replay, withhold, send };

struct Config {
    Endpoint listen{"127.0.0.1", 8080};
    std::optional<Endpoint> collector;  // the parent in --dummy mode
    std::vector<ProxyTarget> proxies;
    FanoutMode mode = FanoutMode::sequential;
    LegOrder legs = LegOrder::parallel;
    OrderScope order = OrderScope::client;
    bool dummy = false;
    bool cache_judge = true;          // judge every reused reply against RFC 9111 (cache_judge.hpp)
    bool client_fetch_stamp = false;  // relay the Collector's X-SPE-* stamps to the client (debugging)

    std::chrono::milliseconds timeout{30'000};         // per proxy leg, whole reply
    std::chrono::milliseconds client_timeout{60'000};  // idle keep-alive / per client read or write
    std::chrono::milliseconds drain_timeout{10'000};   // how long SIGTERM waits for in-flight work

    // Which Multiplier wrote a record (its `multiplier` field): an evaluation may run several, one per client
    // group or host, whose logs are merged into one report. Default: this host's name (multiplier_name_of_host).
    std::string name;
    // Put before every X-SPE-Request tag (PREFIX.RANDOM-ID): a Collector shared by several Multipliers routes
    // each proxy's unsafe copy to the replay port of the Multiplier whose tag it carries. Empty: no prefix.
    std::string tag_prefix;
    std::string log_path;
    std::string rope_log_path;
    std::string capture_dir;
    std::uint64_t capture_max_bytes = 100ull << 20;
    std::size_t capture_body_bytes = 4096;
    bool capture_secrets = false;  // captures keep Cookie, Set-Cookie, (Proxy-)Authorization values as received
    std::uint64_t log_queue_bytes = 64ull << 20;  // records waiting for the writer thread

    AllowList allow;
    std::optional<Endpoint> metrics_listen;  // where /metrics is served (Prometheus text format); none: off
    AllowList metrics_allow;                 // who may scrape it (default loopback)
    std::vector<std::uint16_t> connect_ports{443};
    UnsafeRequests unsafe_requests = UnsafeRequests::withhold;
    std::optional<Endpoint> replay_listen;            // where the Collector sends the proxies' unsafe copies
    std::chrono::milliseconds replay_ttl{180'000};    // how long a client's reply is kept for them
    std::uint64_t replay_store_bytes = 256ull << 20;  // the kept replies' bodies together, at most
    std::uint64_t reference_bytes = 64ull << 20;      // the Collector's bodies kept for comparisons, together
    bool intercept_tls = false;                       // read HTTPS inside CONNECT tunnels (tls_interceptor.hpp)
    std::string ca_dir;                               // SPE's CA (spe-ca.pem, spe-ca.key), made by ./spe ca
    std::vector<std::string> no_intercept;            // host patterns whose tunnels stay opaque
    std::chrono::seconds leaf_validity{std::chrono::hours(24 * 30)};  // of each leaf certificate when made
    std::vector<std::string> compare_headers;
    std::vector<std::string> ignore_headers;  // added to the default ignore list

    std::size_t max_header_bytes = 64 * 1024;
    std::uint64_t max_request_body = 64ull << 20;
    std::uint64_t max_proxy_body = 1ull << 30;
    std::size_t max_conns_per_proxy = 16;  // per client connection
    // How far the client and the proxies may run ahead of what SPE has done (fanout/client_fanouts.hpp): the client
    // connection's fan-outs the fan-out executor has not reached before the client's next request waits for it
    // (the record's client_held_us); a connection's legs one proxy may have waiting for their turn before the next
    // is not sent (busy); how long a client is held at most. None: --timeout and a second (fanout_turn_bound).
    std::uint64_t max_fanout_backlog = 64;
    std::uint64_t max_queued_legs = 1024;
    std::optional<std::chrono::milliseconds> turn_timeout;
    // How long a leg waits for its proxy to answer the requests it comes after (fanout/proxy_turns.hpp) before
    // it sets them aside and goes on another connection: long enough for a proxy to answer what the Collector
    // answered, short enough that one hung leg costs its client's later requests no more than this.
    std::chrono::milliseconds order_wait{2'000};
    unsigned threads = 1;
    unsigned fanout_threads = 1;  // --fanout-threads auto resolved at parsing (core/cpu_placement.hpp)
    std::string via_name = "spe-multiplier-8080";
    std::string log_level = "info";
};

/// Most bytes a connection keeps read but not yet parsed: a header block plus
/// room for body data in flight. Bounds memory against endless chunk
/// extensions and the like.
inline std::size_t read_buffer_limit(const Config& c) {
    return c.max_header_bytes + 64 * 1024;
}

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What a command line asks for: to run the Multiplier, or to print something (or only check the options) and exit.
enum class Action { run, help, version, list_flags, list_cache_rules, check };

struct CommandLine {
    Action action = Action::run;
    Config config;  // with run and check: the validated config
};

/// Parses argv (and --config FILE, unless an action that prints asks for nothing more).
/// Throws ConfigError with a message meant for the user.
CommandLine parse_command_line(int argc, const char* const argv[]);

/// What --help prints: the usage and every flag.
std::string help_text();

Endpoint parse_endpoint(const std::string& text);
/// A --name as given, or ConfigError: 1 to 64 of A-Z a-z 0-9 . _ - (a file-name-safe word, written unescaped).
std::string parse_multiplier_name(const std::string& text);
/// The name of a Multiplier not given one: this host's name, made a valid --name, so that logs taken on
/// different hosts differ without being told.
std::string multiplier_name_of_host();
/// A --tag-prefix as given, or ConfigError: 1 to 16 letters or digits (a tag is at most 64 characters of
/// A-Z a-z 0-9 . _ - for the Collector, and a Squid ACL matches the prefix up to its '.').
std::string parse_tag_prefix(const std::string& text);
ProxyTarget parse_proxy_target(const std::string& text);
std::chrono::milliseconds parse_duration(const std::string& text);

}  // namespace spe
