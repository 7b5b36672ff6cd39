#include "header_policy.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include <algorithm>
#include <array>
#include <map>

namespace spe {
namespace http = boost::beast::http;

namespace {
// RFC 9110 7.6.1 and the de-facto ones (Keep-Alive, Proxy-Connection). TE and
// Trailer are framing details of one hop; Proxy-Authorization is meant for the
// proxy the client talks to, which is us.
constexpr std::array<std::string_view, 9> kHopByHop = {
    "connection", "keep-alive",         "proxy-connection",   "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authenticate", "proxy-authorization"};

std::vector<std::string_view> split_tokens(std::string_view list) {
    std::vector<std::string_view> out;
    while (!list.empty()) {
        auto comma = list.find(',');
        auto item = list.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
            item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
            item.remove_suffix(1);
        if (!item.empty()) out.push_back(item);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return out;
}
}  // namespace

std::string to_lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool has_token(std::string_view list, std::string_view token) {
    for (auto item : split_tokens(list))
        if (boost::beast::iequals(item, token)) return true;
    return false;
}

void append_via(http::fields& fields, unsigned received_version, const std::string& via_name) {
    std::string via(fields[http::field::via]);
    if (!via.empty()) via += ", ";
    via += std::to_string(received_version / 10) + "." + std::to_string(received_version % 10) + " " + via_name;
    fields.set(http::field::via, via);
}

bool is_hop_by_hop(std::string_view name) {
    return std::any_of(kHopByHop.begin(), kHopByHop.end(),
                       [&](std::string_view h) { return boost::beast::iequals(h, name); });
}

void strip_hop_by_hop(http::fields& fields) {
    std::vector<std::string> named;
    for (auto field : {http::field::connection, http::field::proxy_connection})
        for (auto it = fields.find(field); it != fields.end() && it->name() == field; ++it)
            for (auto token : split_tokens(it->value()))
                named.emplace_back(token);
    for (const auto& name : named)
        if (!boost::beast::iequals(name, "close") && !boost::beast::iequals(name, "keep-alive")) fields.erase(name);
    for (auto name : kHopByHop)
        fields.erase(name);
}

const std::vector<std::string>& default_ignored_headers() {
    static const std::vector<std::string> names = {"date",
                                                   "age",
                                                   "via",
                                                   "server",
                                                   "x-cache*",
                                                   "connection",
                                                   "keep-alive",
                                                   "proxy-connection",
                                                   "transfer-encoding",
                                                   "content-length",
                                                   "te",
                                                   "trailer",
                                                   "upgrade",
                                                   "x-varnish",
                                                   "accept-ranges",
                                                   "cache-status",
                                                   "x-squid-error",
                                                   "warning",
                                                   "x-served-by",
                                                   "x-timer",
                                                   "x-forwarded-for"};
    return names;
}

HeaderPolicy::HeaderPolicy() : HeaderPolicy({}, default_ignored_headers()) {}

HeaderPolicy::HeaderPolicy(std::vector<std::string> compare, std::vector<std::string> ignore) {
    for (auto& c : compare)
        compare_.push_back(to_lower(c));
    for (auto& i : ignore)
        ignore_.push_back(to_lower(i));
}

bool HeaderPolicy::matches(const std::vector<std::string>& patterns, std::string_view lower_name) {
    return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
        if (!p.empty() && p.back() == '*')
            return lower_name.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1);
        return lower_name == p;
    });
}

bool HeaderPolicy::is_compared(std::string_view name) const {
    auto lower = to_lower(name);
    if (!compare_.empty() && !matches(compare_, lower)) return false;
    return !matches(ignore_, lower);
}

ComparedHeaders HeaderPolicy::select(const http::fields& fields) const {
    std::map<std::string, std::string> joined;
    for (const auto& f : fields) {
        auto name = to_lower(f.name_string());
        if (!is_compared(name)) continue;
        auto& value = joined[name];
        if (!value.empty()) value += ", ";
        value.append(f.value().data(), f.value().size());
    }
    ComparedHeaders out;
    out.reserve(joined.size());
    for (auto& [name, value] : joined)
        out.push_back({name, std::move(value)});
    return out;
}

}  // namespace spe
