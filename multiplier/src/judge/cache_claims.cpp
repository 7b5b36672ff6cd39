#include "judge/cache_claims.hpp"
#include "core/ascii.hpp"
#include "http/field_list.hpp"

#include <boost/container/static_vector.hpp>

#include <algorithm>
#include <string_view>

namespace spe {

namespace {

/// A claim field's members, for reading from the last (the cache nearest the client, RFC 9211 2).
/// At most 16: a claim field names a few caches; kept inline, it is read for every reply.
boost::container::static_vector<std::string_view, 16> members(std::string_view list) {
    boost::container::static_vector<std::string_view, 16> out;
    for (const auto member : FieldList(list)) {
        if (out.size() == out.capacity()) break;
        out.push_back(member);
    }
    return out;
}

/// The cache name of a Cache-Status member ("name; hit", the name a token or a quoted string).
std::string status_name(std::string_view member) {
    return unquoted(split_parameters(member).head);
}

/// The cache name of an X-Cache member ("HIT from name"); empty without one.
std::string_view x_cache_name(std::string_view member) {
    const auto from = member.find(" from ");
    return from == std::string_view::npos ? std::string_view{} : trim(member.substr(from + 6));
}

bool contains(const std::vector<std::string>& names, std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

/// What one Cache-Status member's parameters claim: a 304 to its own forward is a revalidation
/// (2.5, fwd-status), a bare hit without a forward a hit, anything else a miss.
CacheClaim status_claim(const boost::beast::http::param_list& parameters) {
    if (parameter(parameters, "fwd-status") == "304") return CacheClaim::revalidated;
    if (parameter(parameters, "hit") == "" && !parameter(parameters, "fwd")) return CacheClaim::hit;
    return CacheClaim::miss;
}

}  // namespace

std::vector<std::string> claim_names(const CacheHeaders& reply) {
    std::vector<std::string> out;
    if (const auto cache_status = reply.cache_status())
        for (const auto m : members(*cache_status))
            out.push_back(status_name(m));
    if (const auto x_cache = reply.x_cache())
        for (const auto m : members(*x_cache))
            if (const auto n = x_cache_name(m); !n.empty()) out.emplace_back(n);
    return out;
}

CacheClaim cache_claim(const CacheHeaders& reply, const std::vector<std::string>& upstream_names) {
    // The member nearest the client is the last one (RFC 9211 2): the proxy's own.
    if (const auto cache_status = reply.cache_status()) {
        const auto ms = members(*cache_status);
        for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
            const auto [head, parameters] = split_parameters(*it);
            if (!contains(upstream_names, unquoted(head))) return status_claim(parameters);
        }
    }
    if (const auto x_cache = reply.x_cache()) {
        const auto ms = members(*x_cache);
        for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
            if (contains(upstream_names, x_cache_name(*it))) continue;
            if (spe::iequals(it->substr(0, 3), "HIT")) return CacheClaim::hit;
            if (spe::iequals(it->substr(0, 4), "MISS")) return CacheClaim::miss;
        }
    }
    return CacheClaim::none;
}

}  // namespace spe
