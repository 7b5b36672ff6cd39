#include "http/header_policy.hpp"
#include "core/ascii.hpp"
#include "http/field_list.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>

namespace spe {
namespace http = boost::beast::http;

namespace {
// RFC 9110 7.6.1 and the de-facto ones (Keep-Alive, Proxy-Connection). TE and
// Trailer are framing details of one hop; Proxy-Authorization is meant for the
// proxy the client talks to, which is us.
constexpr std::array<std::string_view, 9> kHopByHop = {
    "connection", "keep-alive",         "proxy-connection",   "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authenticate", "proxy-authorization"};

bool is_hop_by_hop_field(http::field f) {
    switch (f) {
        case http::field::connection:
        case http::field::keep_alive:
        case http::field::proxy_connection:
        case http::field::te:
        case http::field::trailer:
        case http::field::transfer_encoding:
        case http::field::upgrade:
        case http::field::proxy_authenticate:
        case http::field::proxy_authorization:
            return true;
        default:
            return false;
    }
}
}  // namespace

std::string to_lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool connection_keeps_alive(unsigned version, std::string_view connection) {
    return version >= 11 ? !lists_token(connection, "close") : lists_token(connection, "keep-alive");
}

void append_via(http::fields& fields, unsigned received_version, const std::string& via_name) {
    std::string via(fields[http::field::via]);
    if (!via.empty()) via += ", ";
    via += std::to_string(received_version / 10) + "." + std::to_string(received_version % 10) + " " + via_name;
    fields.set(http::field::via, via);
}

void erase_collector_stamps(http::fields& fields) {
    for (auto name : {kFetchStampHeader, kValidationStampHeader, kReplyToHeader, kParentStampHeader})
        fields.erase(name);
}

void erase_withheld_fields(http::fields& fields) {
    for (auto it = fields.begin(); it != fields.end();) {
        const auto name = it->name_string();
        const bool note = it->name() == http::field::unknown && name.size() > kOriginFieldPrefix.size() &&
                          spe::iequals(name.substr(0, kOriginFieldPrefix.size()), kOriginFieldPrefix);
        it = note ? fields.erase(it) : std::next(it);
    }
}

std::string_view compared_name(std::string_view lower_name) {
    constexpr std::string_view prefix = "x-spe-origin-";
    static_assert(prefix.size() == kOriginFieldPrefix.size());
    if (lower_name.size() > prefix.size() && lower_name.starts_with(prefix)) lower_name.remove_prefix(prefix.size());
    return lower_name;
}

bool is_hop_by_hop(std::string_view name) {
    return std::any_of(kHopByHop.begin(), kHopByHop.end(), [&](std::string_view h) { return spe::iequals(h, name); });
}

void strip_hop_by_hop(http::fields& fields) {
    // The names the Connection fields list go too, but for its options close and keep-alive.
    boost::container::small_vector<std::string, 4> named;
    for (auto field : {http::field::connection, http::field::proxy_connection})
        for (auto it = fields.find(field); it != fields.end() && it->name() == field; ++it)
            for (const auto token : FieldList(it->value()))
                if (!spe::iequals(token, "close") && !spe::iequals(token, "keep-alive")) named.emplace_back(token);
    // One pass over the fields: erasing by name searched them once per hop-by-hop name. Every name of
    // kHopByHop is known to Beast, whose parser matched it without regard to case.
    for (auto it = fields.begin(); it != fields.end();) {
        const auto name = it->name_string();
        const bool hop = is_hop_by_hop_field(it->name()) ||
                         std::any_of(named.begin(), named.end(), [&](const auto& n) { return spe::iequals(n, name); });
        it = hop ? fields.erase(it) : std::next(it);
    }
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
                                                   "x-forwarded-for",
                                                   "x-spe-fetch",
                                                   "x-spe-parent",
                                                   "x-spe-reply-to",
                                                   "x-spe-validated"};
    return names;
}

HeaderPolicy::HeaderPolicy() : HeaderPolicy({}, default_ignored_headers()) {}

HeaderPolicy::Patterns::Patterns(const std::vector<std::string>& patterns) : empty_(patterns.empty()) {
    for (const auto& p : patterns) {
        auto lower = to_lower(p);
        if (!lower.empty() && lower.back() == '*') {
            lower.pop_back();
            prefixes_.push_back(std::move(lower));
            continue;
        }
        if (names_by_length_.size() <= lower.size()) names_by_length_.resize(lower.size() + 1);
        names_by_length_[lower.size()].push_back(std::move(lower));
    }
}

bool HeaderPolicy::Patterns::matches(std::string_view lower_name) const {
    if (lower_name.size() < names_by_length_.size())
        for (const auto& n : names_by_length_[lower_name.size()])
            if (lower_name == n) return true;
    return std::any_of(prefixes_.begin(), prefixes_.end(),
                       [&](const std::string& p) { return lower_name.starts_with(p); });
}

HeaderPolicy::HeaderPolicy(std::vector<std::string> compare, std::vector<std::string> ignore)
    : compare_(compare), ignore_(ignore) {
    constexpr auto kKnown = static_cast<std::size_t>(http::field::xref) + 1;
    known_compared_.resize(kKnown);
    for (std::size_t f = 1; f < kKnown; ++f) {  // 0 is field::unknown
        auto lower = to_lower(http::to_string(static_cast<http::field>(f)));
        if (is_compared_lower(lower)) known_compared_[f] = std::move(lower);
    }
}

bool HeaderPolicy::is_compared_lower(std::string_view lower_name) const {
    if (!compare_.empty() && !compare_.matches(lower_name)) return false;
    return !ignore_.matches(lower_name);
}

bool HeaderPolicy::is_compared(std::string_view name) const {
    return is_compared_lower(to_lower(name));
}

ComparedHeaders HeaderPolicy::select(FieldViews fields) const {
    // The compared fields as views first (an unknown name lowercased into one buffer), sorted by
    // name, then each name's strings made once: moving strings while sorting cost more than sorting.
    struct Picked {
        std::string_view name;  // a known name's; an unknown name is at `lowered` in `unknown_names`
        bool unknown = false;
        std::size_t lowered = 0;
        std::size_t length = 0;
        std::string_view value;
        std::string_view name_in(const std::string& unknown_names) const {
            return unknown ? std::string_view(unknown_names).substr(lowered, length) : name;
        }
    };
    boost::container::small_vector<Picked, 24> picked;
    std::string unknown_names;
    for (const auto& f : fields) {
        const auto id = static_cast<std::size_t>(f.name());
        if (f.name() != http::field::unknown && id < known_compared_.size()) {
            if (!known_compared_[id].empty()) picked.push_back({known_compared_[id], false, 0, 0, f.value()});
            continue;
        }
        const auto at = unknown_names.size();
        append_lower(unknown_names, f.name_string());
        // The Collector's X-SPE-Origin-<name>: what the proxies got as <name> (kOriginFieldPrefix).
        const auto name = compared_name(std::string_view(unknown_names).substr(at));
        const auto name_at = unknown_names.size() - name.size();
        if (is_compared_lower(name))
            picked.push_back({{}, true, name_at, name.size(), f.value()});
        else
            unknown_names.resize(at);
    }
    const auto name_of = [&](const Picked& p) { return p.name_in(unknown_names); };
    // Sorted by name; a repeated name becomes one entry, values joined in arrival order (the
    // sort is stable). Insertion sort: a reply has a dozen headers, often already in order.
    for (std::size_t i = 1; i < picked.size(); ++i)
        for (std::size_t j = i; j > 0 && name_of(picked[j]) < name_of(picked[j - 1]); --j)
            std::swap(picked[j], picked[j - 1]);
    ComparedHeaders out;
    out.reserve(picked.size());
    for (const auto& p : picked) {
        if (!out.empty() && out.back().name == name_of(p)) {
            out.back().value.append(", ").append(p.value);
        } else {
            out.push_back({std::string(name_of(p)), std::string(p.value)});
        }
    }
    return out;
}

}  // namespace spe
