#include "judge/cache_claims.hpp"
#include "core/ascii.hpp"

#include <boost/container/static_vector.hpp>

#include <algorithm>
#include <string_view>

namespace spe {

namespace {

/// Splits a list field into its members (no quoted commas in these fields' names).
/// (At most 16: a claim header names a few caches; kept inline, it is read for every reply.)
boost::container::static_vector<std::string_view, 16> members(std::string_view list) {
    boost::container::static_vector<std::string_view, 16> out;
    while (!list.empty() && out.size() < out.capacity()) {
        const auto comma = list.find(',');
        if (auto m = trim(list.substr(0, comma)); !m.empty()) out.push_back(m);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return out;
}

/// The cache name of a Cache-Status member ("name; hit") or X-Cache value ("HIT from name").
std::string_view member_name(std::string_view m, bool cache_status) {
    if (cache_status) return trim(m.substr(0, m.find(';')));
    const auto from = m.find(" from ");
    return from == std::string_view::npos ? std::string_view{} : trim(m.substr(from + 6));
}

/// Whether a Cache-Status member's parameters ("; hit; fwd=stale") hold `key` with this value (or, without
/// one, the bare key).
bool has_param(std::string_view params, std::string_view key, std::string_view value = {}) {
    while (!params.empty()) {
        const auto semi = params.find(';');
        const auto p = trim(params.substr(0, semi));
        const auto eq = p.find('=');
        const bool bare = eq == std::string_view::npos;
        if (trim(p.substr(0, eq)) == key && (value.empty() ? bare : !bare && trim(p.substr(eq + 1)) == value))
            return true;
        if (semi == std::string_view::npos) break;
        params.remove_prefix(semi + 1);
    }
    return false;
}

bool contains(const std::vector<std::string>& names, std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

std::vector<std::string> claim_names(const CacheHeaders& reply) {
    std::vector<std::string> out;
    if (const auto cache_status = reply.cache_status())
        for (auto m : members(*cache_status))
            out.emplace_back(member_name(m, true));
    if (const auto x_cache = reply.x_cache())
        for (auto m : members(*x_cache))
            if (auto n = member_name(m, false); !n.empty()) out.emplace_back(n);
    return out;
}

CacheClaim cache_claim(const CacheHeaders& reply, const std::vector<std::string>& upstream_names) {
    // The member nearest the client is the last one (RFC 9211 2): the proxy's own.
    if (const auto cache_status = reply.cache_status()) {
        const auto ms = members(*cache_status);
        for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
            if (contains(upstream_names, member_name(*it, true))) continue;
            const auto params = it->substr(std::min(it->size(), it->find(';')));
            if (has_param(params, "fwd-status", "304")) return CacheClaim::revalidated;
            if (has_param(params, "hit") && params.find("fwd=") == std::string_view::npos) return CacheClaim::hit;
            return CacheClaim::miss;
        }
    }
    if (const auto x_cache = reply.x_cache()) {
        const auto ms = members(*x_cache);
        for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
            if (contains(upstream_names, member_name(*it, false))) continue;
            if (spe::iequals(it->substr(0, 3), "HIT")) return CacheClaim::hit;
            if (spe::iequals(it->substr(0, 4), "MISS")) return CacheClaim::miss;
        }
    }
    return CacheClaim::none;
}

}  // namespace spe
