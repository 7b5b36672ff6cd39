#include "core/config.hpp"
#include "core/flag_table.hpp"

#include <boost/program_options/parsers.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
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

constexpr std::size_t kMaxNameLength = 64;

/// A character a Multiplier's name may have: the record writes the name unescaped, and a merged report may
/// make file names of it.
bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

}  // namespace

std::string parse_multiplier_name(const std::string& text) {
    if (text.empty() || text.size() > kMaxNameLength || !std::all_of(text.begin(), text.end(), name_char))
        throw ConfigError("--name must be 1 to 64 letters, digits, '.', '_' or '-', got '" + text + "'");
    return text;
}

std::string parse_tag_prefix(const std::string& text) {
    const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    if (text.empty() || text.size() > 16 || !std::all_of(text.begin(), text.end(), alnum))
        throw ConfigError("--tag-prefix must be 1 to 16 letters or digits, got '" + text + "'");
    return text;
}

std::string multiplier_name_of_host() {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
    std::string name(host.data());
    // A host name has only these characters in practice; anything else must not stop a start the user
    // gave no name for.
    for (char& c : name)
        if (!name_char(c)) c = '-';
    name.resize(std::min(name.size(), kMaxNameLength));
    return name.empty() ? "multiplier" : name;
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

/// Where ./spe ca puts the CA (spe_tools/ca.py default_dir: the same rule).
std::string default_ca_dir() {
    if (const char* dir = std::getenv("SPE_CA_DIR"); dir && *dir) return dir;
    if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) return std::string(data) + "/spe/ca";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.local/share/spe/ca";
}

/// Which flags go together and which exclude each other: by whether they were given, before any value is read.
void check_combinations(const po::variables_map& vm) {
    const bool dummy = vm["dummy"].as<bool>();
    if (dummy) {
        if (!vm.count("parent")) throw ConfigError("--dummy needs --parent HOST:PORT");
        if (vm.count("proxy")) throw ConfigError("--dummy does not fan out: drop the --proxy options");
        if (vm.count("replay-listen")) throw ConfigError("--replay-listen is for the Multiplier, not a --dummy proxy");
    } else {
        if (vm.count("parent")) throw ConfigError("--parent is only for --dummy mode; use --collector");
        if (!vm.count("collector"))
            throw ConfigError("--collector HOST:PORT is required (or --dummy --parent HOST:PORT)");
    }
    const bool intercept = vm["intercept-tls"].as<bool>();
    if (intercept && dummy)
        throw ConfigError("--intercept-tls is for the Multiplier; a --dummy proxy gets intercepted requests as http");
    if (!intercept && (vm.count("ca-dir") || vm.count("no-intercept") || vm.count("leaf-validity")))
        throw ConfigError("--ca-dir, --no-intercept and --leaf-validity only apply with --intercept-tls");
}

/// The metrics listener is never the proxy's (nor the replay port's), and its series name the Collector
/// `collector`, so no proxy may be named so.
void check_metrics_listen(const Config& c) {
    if (!c.metrics_listen) return;
    if (c.metrics_listen->port == c.listen.port)
        throw ConfigError("--metrics-listen must not use the --listen port " + std::to_string(c.listen.port));
    if (c.replay_listen && c.metrics_listen->port == c.replay_listen->port)
        throw ConfigError("--metrics-listen must not use the --replay-listen port");
    for (const auto& p : c.proxies)
        if (p.name == "collector")
            throw ConfigError("with --metrics-listen, no proxy may be named 'collector' (the Collector's label)");
}

/// The defaults that depend on other flags, and the bounds the values must keep.
void complete(Config& c, const po::variables_map& vm) {
    // Loopback only, unless the user named the clients.
    for (auto [given, list] : {std::pair{"allow", &c.allow}, std::pair{"metrics-allow", &c.metrics_allow}})
        if (!vm.count(given))
            for (const auto* cidr : {"127.0.0.0/8", "::1/128"})
                list->add(cidr);
    check_metrics_listen(c);
    // --unsafe-requests and the replay port it needs: the safe choice unless told otherwise.
    if (!vm.count("unsafe-requests"))
        c.unsafe_requests = c.replay_listen ? UnsafeRequests::replay : UnsafeRequests::withhold;
    if (c.unsafe_requests == UnsafeRequests::replay && !c.replay_listen)
        throw ConfigError("--unsafe-requests replay needs --replay-listen HOST:PORT (where the Collector sends them)");
    if (!vm.count("ca-dir")) c.ca_dir = default_ca_dir();
    if (!vm.count("name")) c.name = multiplier_name_of_host();
    if (!vm.count("via-name")) c.via_name = "spe-multiplier-" + std::to_string(c.listen.port);
    if (c.max_header_bytes < 1024) throw ConfigError("--max-header-bytes must be at least 1024");
    if (c.max_conns_per_proxy == 0) throw ConfigError("--max-conns-per-proxy must be at least 1");
    if (c.threads == 0 || c.threads > 64) throw ConfigError("--threads must be 1..64");
    if (c.via_name.empty() || c.via_name.find_first_of(" ,\r\n") != std::string::npos)
        throw ConfigError("--via-name must be one token without spaces or commas");
}

Config build_config(const po::variables_map& vm) {
    check_combinations(vm);
    Config c;
    for (const auto& flag : flag_table())
        if (flag.set && vm.count(flag.name)) flag.set(c, vm[flag.name]);
    complete(c, vm);
    return c;
}

}  // namespace

std::string help_text() {
    std::ostringstream out;
    out << "Usage: spe-multiplier --collector HOST:PORT --proxy NAME=HOST:PORT ... [options]\n"
           "       spe-multiplier --dummy --parent HOST:PORT [options]\n\n"
           "SPE's Multiplier: a forward proxy that answers each client request from the\n"
           "Collector, then sends it to every proxy under test and compares the replies.\n\n"
        << describe_flags() << "\n";
    return out.str();
}

CommandLine parse_command_line(int argc, const char* const argv[]) {
    const auto options = describe_flags();
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        // An action that prints something needs nothing else (not even a readable --config FILE).
        for (const auto& flag : flag_table())
            if (flag.kind == FlagKind::action && flag.action != Action::check && vm.count(flag.name))
                return {flag.action, {}};
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
    return {vm.count("check") ? Action::check : Action::run, build_config(vm)};
}

}  // namespace spe
