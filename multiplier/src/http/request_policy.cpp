#include "http/request_policy.hpp"
#include "core/ascii.hpp"

#include "http/field_list.hpp"
#include "http/header_policy.hpp"

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <random>

namespace spe {

std::optional<Endpoint> http_authority(std::string_view target) {
    constexpr std::string_view scheme = "http://";
    if (target.size() <= scheme.size() || !spe::iequals(target.substr(0, scheme.size()), scheme)) return std::nullopt;
    auto rest = target.substr(scheme.size());
    auto authority = rest.substr(0, rest.find_first_of("/?#"));
    if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    if (authority.empty()) return std::nullopt;
    Endpoint ep{std::string(authority), 80};
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        ep.host = std::string(authority.substr(0, colon));
        auto port_text = authority.substr(colon + 1);
        if (port_text.empty() || port_text.size() > 5 ||
            port_text.find_first_not_of("0123456789") != std::string_view::npos)
            return std::nullopt;
        auto port = std::stoul(std::string(port_text));
        if (port == 0 || port > 65535) return std::nullopt;
        ep.port = static_cast<std::uint16_t>(port);
    }
    if (ep.host.size() > 2 && ep.host.front() == '[' && ep.host.back() == ']')
        ep.host = ep.host.substr(1, ep.host.size() - 2);
    return ep;
}

namespace {
/// True if one Via entry ("1.1 name (comment)") has exactly `name` as its received-by.
bool via_names_hop(std::string_view via, std::string_view name) {
    for (const auto entry : FieldList(via)) {
        const auto space = entry.find(' ');
        if (space == std::string_view::npos) continue;
        auto received_by = entry.substr(space + 1);
        if (received_by.substr(0, received_by.find(' ')) == name) return true;
    }
    return false;
}

/// The addresses a target host stands for without a DNS lookup: an address
/// literal (IPv4-mapped IPv6 as IPv4), or "localhost"; none for other names.
std::vector<boost::asio::ip::address> literal_addresses(const std::string& host) {
    if (spe::iequals(host, "localhost"))
        return {boost::asio::ip::address_v4::loopback(), boost::asio::ip::address_v6::loopback()};
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(host, ec);
    if (ec) return {};
    if (address.is_v6() && address.to_v6().is_v4_mapped())
        address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
    return {address};
}

/// Whether a connection to `target` (on the listening port) reaches `listen`.
/// A wildcard listen address takes this machine's loopback and wildcard
/// addresses (IPv6's also IPv4's: Linux listens dual-stack); a specific one
/// only itself (127.0.0.2 is not 127.0.0.1).
bool reaches(const boost::asio::ip::address& target, const boost::asio::ip::address& listen) {
    if (!listen.is_unspecified()) return target == listen;
    if (listen.is_v4() && !target.is_v4()) return false;
    return target.is_loopback() || target.is_unspecified();
}

/// True only when the target certainly is this Multiplier: its listen address
/// as written, or an address literal (or localhost) that reaches it. A name of
/// this machine or one of its interface addresses that loops comes back with
/// this Multiplier's Via entry instead: refused then.
bool names_this_multiplier(const std::string& host, const Endpoint& listen) {
    if (spe::iequals(host, listen.host)) return true;
    const auto listen_addresses = literal_addresses(listen.host);
    for (const auto& target : literal_addresses(host))
        for (const auto& address : listen_addresses)
            if (reaches(target, address)) return true;
    return false;
}
}  // namespace

std::string ConnectTarget::bare_host() const {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
    return host;
}

namespace {
constexpr std::size_t kMaxHostLength = 255;

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/// The port of an authority: 1-65535 in decimal, no sign, no leading zero.
std::optional<std::uint16_t> decimal_port(std::string_view text) {
    if (text.empty() || text.size() > 5 || text.front() == '0' || !std::all_of(text.begin(), text.end(), is_digit))
        return std::nullopt;
    const auto port = std::stoul(std::string(text));
    if (port > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(port);
}

/// RFC 3986 IPv4address: four dec-octets (0-255, no leading zero).
bool is_dotted_quad(std::string_view host) {
    int octets = 0;
    for (;;) {
        const auto dot = host.find('.');
        const auto octet = host.substr(0, dot);
        if (octet.empty() || octet.size() > 3 || (octet.size() > 1 && octet.front() == '0') ||
            !std::all_of(octet.begin(), octet.end(), is_digit) || std::stoi(std::string(octet)) > 255)
            return false;
        ++octets;
        if (dot == std::string_view::npos) break;
        host.remove_prefix(dot + 1);
    }
    return octets == 4;
}

/// Every dot-separated label a number (decimal, octal or 0x hex): inet_aton's forms of an IPv4 address.
bool looks_numeric(std::string_view host) {
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    for (;;) {
        const auto dot = host.find('.');
        auto label = host.substr(0, dot);
        if (label.size() > 1 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) label.remove_prefix(2);
        const bool hex = label.size() < host.substr(0, dot).size();
        const bool number = std::all_of(label.begin(), label.end(), [hex](char c) {
            return is_digit(c) || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
        });
        if (!number || (label.empty() && !hex)) return false;
        if (dot == std::string_view::npos) return true;
        host.remove_prefix(dot + 1);
    }
}

bool is_ipv6(std::string_view text) {
    boost::system::error_code ec;
    boost::asio::ip::make_address_v6(std::string(text), ec);
    return !ec;
}

bool host_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' || c == '_';
}

/// Why `target` is not authority-form; empty when it is (host and port then set).
std::string connect_target_problem(std::string_view target, std::string& host, std::uint16_t& port) {
    if (target.empty()) return "no target";
    if (target.find('@') != std::string_view::npos) return "userinfo (user@) is not allowed";
    if (target.find('%') != std::string_view::npos) return "percent-encoding is not allowed";
    if (target.find_first_of(" \t\r\n\v\f") != std::string_view::npos) return "whitespace is not allowed";
    std::string_view port_text;
    if (target.front() == '[') {
        const auto close = target.find(']');
        if (close == std::string_view::npos) return "an IPv6 address without its closing ']'";
        const auto inside = target.substr(1, close - 1);
        if (!inside.empty() && (inside.front() == 'v' || inside.front() == 'V'))
            return "IPvFuture addresses are not supported";
        if (inside.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos || !is_ipv6(inside))
            return "'[...]' must hold an IPv6 address";
        const auto rest = target.substr(close + 1);
        if (rest.empty()) return "no port";
        if (rest.front() != ':') return "only ':port' may follow an IPv6 address";
        port_text = rest.substr(1);
        if (port_text.find(':') != std::string_view::npos) return "more than one port";
        host = std::string(target.substr(0, close + 1));
    } else {
        const auto colon = target.find(':');
        if (colon == std::string_view::npos) return "no port";
        if (target.find(':', colon + 1) != std::string_view::npos) {
            if (is_ipv6(target) || is_ipv6(target.substr(0, target.rfind(':'))))
                return "an IPv6 address must be in brackets: [address]:port";
            return "more than one ':' (a target has exactly one port)";
        }
        const auto name = target.substr(0, colon);
        if (name.empty()) return "no host";
        if (name.size() > kMaxHostLength) return "the host is longer than 255 characters";
        if (!std::all_of(name.begin(), name.end(), host_name_char))
            return "the host has characters outside a host name (letters, digits, '-', '.', '_')";
        if (looks_numeric(name) && !is_dotted_quad(name))
            return "a numeric host must be an IPv4 address in four decimal parts (no 127.1, octal or hex)";
        port_text = target.substr(colon + 1);
        host = std::string(name);
    }
    if (port_text.empty()) return "no port";
    const auto parsed = decimal_port(port_text);
    if (!parsed) return "the port must be a number from 1 to 65535 (digits only, no leading zero)";
    port = *parsed;
    return {};
}
}  // namespace

std::optional<ConnectTarget> parse_connect_target(std::string_view target, std::string* why) {
    ConnectTarget out;
    auto problem = connect_target_problem(target, out.host, out.port);
    if (problem.empty()) return out;
    if (why)
        *why = "bad CONNECT target: " + problem + "; expected host:port, IPv4:port or [IPv6]:port (RFC 9110 9.3.6)";
    return std::nullopt;
}

std::optional<InterceptedTarget> intercepted_target(std::string_view target, const ConnectTarget& tunnel) {
    if (target.empty() || target.front() != '/') return std::nullopt;
    const auto port = std::to_string(tunnel.port);
    InterceptedTarget out;
    out.upstream_target = "http://" + tunnel.host + ":" + port + std::string(target);
    out.url = "https://" + tunnel.host + (tunnel.port == 443 ? "" : ":" + port) + std::string(target);
    return out;
}

std::optional<Refused> check_request(const Request& req, const Config& config) {
    // Beast rejects most framing attacks while parsing; a request carrying both
    // lengths is refused here too, whatever the parser made of it (RFC 9112 6.3).
    if (req.count(http::field::content_length) && req.count(http::field::transfer_encoding))
        return Refused{Refusal::ambiguous_framing,
                       "both Content-Length and Transfer-Encoding are present (possible request smuggling)"};
    // Only plain chunked framing is understood: "chunked" not last leaves the
    // body length unknown (RFC 9112 6.3: 400), other codings would be lost when
    // the body is re-framed by length for the upstreams (RFC 9112 6.1: 501).
    for (auto it = req.find(http::field::transfer_encoding);
         it != req.end() && it->name() == http::field::transfer_encoding; ++it) {
        if (!lists_token(it->value(), "chunked"))
            return Refused{Refusal::unsupported_transfer_coding,
                           "unsupported Transfer-Encoding '" + std::string(it->value()) + "'"};
        if (!spe::iequals(it->value(), "chunked"))
            return Refused{Refusal::ambiguous_framing,
                           "Transfer-Encoding '" + std::string(it->value()) +
                               "': only 'chunked' alone is accepted (possible request smuggling)"};
    }
    if (req.version() != 10 && req.version() != 11)
        return Refused{Refusal::unsupported_version, "only HTTP/1.0 and HTTP/1.1 are supported"};
    const auto target = req.target();
    if (target.size() >= 8 && spe::iequals(target.substr(0, 8), "https://"))
        return Refused{Refusal::not_a_proxy_request,
                       "https:// URLs go through CONNECT; the Multiplier does not speak TLS"};
    auto authority = http_authority(target);
    if (!authority)
        return Refused{Refusal::not_a_proxy_request,
                       "not a proxy request: the target must be an absolute http:// URL (use the "
                       "Multiplier as an HTTP proxy)"};
    if (authority->port == config.listen.port && names_this_multiplier(authority->host, config.listen))
        return Refused{Refusal::forwarding_loop, "the request is addressed to the Multiplier itself (forwarding loop)"};
    for (auto it = req.find(http::field::via); it != req.end() && it->name() == http::field::via; ++it)
        if (via_names_hop(it->value(), config.via_name))
            return Refused{Refusal::forwarding_loop, "the request already passed through this Multiplier (Via loop)"};
    return std::nullopt;
}

bool client_wants_keep_alive(const Request& req) {
    auto proxy_connection = req[http::field::proxy_connection];
    if (lists_token(proxy_connection, "close")) return false;
    if (req.version() < 11 && lists_token(proxy_connection, "keep-alive")) return true;
    return connection_keeps_alive(req.version(), req[http::field::connection]);
}

bool is_validation(const Request& req) {
    return req.count(http::field::if_modified_since) || req.count(http::field::if_none_match);
}

std::string_view authority_text(std::string_view target) {
    auto start = target.find("://");
    if (start == std::string_view::npos) return {};
    auto rest = target.substr(start + 3);
    auto authority = rest.substr(0, rest.find_first_of("/?#"));
    if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
    return authority;
}

Request make_upstream_request(const Request& client_request, const std::string& via_name, bool keep_alive) {
    Request up = client_request;
    strip_hop_by_hop(up);
    // RFC 9112 3.2.2: a proxy forwarding an absolute-form request generates Host
    // from the target (the client's Host, if any, may disagree or be missing).
    if (auto authority = authority_text(up.target()); !authority.empty()) up.set(http::field::host, authority);
    up.erase(http::field::expect);  // we answered 100-continue ourselves and hold the whole body
    up.erase(kClientHeader);        // which client it is (--order client) is the Multiplier's to know
    append_via(up, client_request.version(), via_name);
    up.version(11);
    up.keep_alive(keep_alive);
    // Sets Content-Length from the (decoded) body, so every upstream gets the
    // same, simplest framing whatever the client used.
    if (!up.body().empty() || up.method() == http::verb::post || up.method() == http::verb::put) up.prepare_payload();
    return up;
}

void set_request_tag(Request& upstream, std::string_view tag) {
    upstream.erase(kRequestTagHeader);
    erase_collector_stamps(upstream);  // a client must not choose another request's stamps
    upstream.erase(kSchemeHeader);
    upstream.set(kRequestTagHeader, tag);
}

std::string request_tag(std::string_view process, std::uint64_t id) {
    return fmt::format("{}-{}", process, id);
}

std::string random_process_tag() {
    std::random_device random;
    const auto high = static_cast<std::uint64_t>(random()) << 32;
    return fmt::format("{:016x}", high | random());
}

std::string process_tag(std::string_view prefix) {
    return prefix.empty() ? random_process_tag() : fmt::format("{}.{}", prefix, random_process_tag());
}

}  // namespace spe
