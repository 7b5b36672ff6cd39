// What a leg that overtakes an earlier request at a proxy needs to know of it.
// A cache can only tell the order of requests that share a cache key, or of an
// unsafe request and what follows it (RFC 9111 4.4 invalidates its target and
// the URIs its reply's Location and Content-Location name): a leg sent before
// the proxy answered such a request is not held to what that request did to
// the cache. Requests for other URLs leave nothing in a cache the later one
// reads, so overtaking them is recorded but changes no verdict.
#pragma once

#include "core/url_key.hpp"

#include <cstdint>

namespace spe {

struct OrderTicket {
    std::uint64_t id = 0;  // the request's record id
    UrlKey url = 0;        // its URL's key (url_key)
    bool unsafe = false;   // its method may invalidate stored copies (is_unsafe_method)

    /// Whether overtaking this request may change what a cache gives a later request for `later_url`: the
    /// same URL, or an unsafe request, whose invalidations reach URIs only its reply names.
    bool affects(UrlKey later_url) const { return unsafe || url == later_url; }
};

}  // namespace spe
