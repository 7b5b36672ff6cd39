// What a leg that overtakes an earlier request at a proxy needs to know of it.
// A cache can only tell the order of requests that share a cache key, or of an
// unsafe request and what follows it (RFC 9111 4.4 invalidates its target and
// the URIs its reply's Location and Content-Location name): a leg sent before
// the proxy answered such a request is not held to what that request did to
// the cache. Requests for other URLs leave nothing in a cache the later one
// reads, so overtaking them is recorded but changes no verdict.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace spe {

struct OrderTicket {
    std::uint64_t id = 0;       // the request's record id
    std::uint64_t url_key = 0;  // a hash of its URL (order_url_key)
    bool unsafe = false;        // its method may invalidate stored copies (is_unsafe_method)

    /// Whether overtaking this request may change what a cache gives `later` (its url_key): the same URL,
    /// or an unsafe request, whose invalidations reach URIs only its reply names.
    bool affects(std::uint64_t later) const { return unsafe || url_key == later; }
};

inline std::uint64_t order_url_key(std::string_view url) {
    return std::hash<std::string_view>{}(url);
}

}  // namespace spe
