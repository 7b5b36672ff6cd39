// Cache-Control (RFC 9111 5.2), request and response directives, parsed once
// into what the cache-rule judge asks of them.
#pragma once

#include "core/ascii.hpp"  // trim

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

struct CacheControl {
    // Response directives. The qualified forms of no-cache and private (with
    // field names) allow storing without those fields, so they are kept apart.
    bool no_store = false;
    bool no_cache = false;  // unqualified
    bool no_cache_fields = false;
    bool private_ = false;  // unqualified
    bool private_fields = false;
    // The field names the qualified forms list, lowercase, space-separated (core/name_list.hpp).
    std::string no_cache_names;
    std::string private_names;
    bool public_ = false;
    bool must_revalidate = false;
    bool proxy_revalidate = false;
    std::optional<std::int64_t> max_age;
    std::optional<std::int64_t> s_maxage;
    std::optional<std::int64_t> stale_while_revalidate;  // RFC 5861
    std::optional<std::int64_t> stale_if_error;          // RFC 5861
    // Request-only directives (no-store, no-cache and max-age are shared).
    bool max_stale_any = false;
    std::optional<std::int64_t> max_stale;
    std::optional<std::int64_t> min_fresh;
    bool only_if_cached = false;
    // Freshness information that is invalid or repeated (RFC 9111 4.2.1): caches
    // "are encouraged to consider responses that have invalid freshness
    // information ... to be stale"; of repeated values "either the first
    // occurrence should be used or the response should be considered stale".
    bool max_age_invalid = false;                   // the first max-age is no delta-seconds (max_age left absent)
    bool s_maxage_invalid = false;                  // the first s-maxage is no delta-seconds (s_maxage left absent)
    bool freshness_repeated = false;                // max-age or s-maxage given more than once (the first kept)
    std::optional<std::int64_t> freshness_longest;  // the longest of every valid max-age / s-maxage given
};

/// Parses a Cache-Control field value (repeated fields joined with ", ").
/// Unknown directives are ignored; an argument that is no delta-seconds
/// (directive_seconds(), delta_seconds.hpp: `'3600'`, `3600s`, `-1`, empty)
/// makes the directive absent. Of a repeated max-age or s-maxage the first counts;
/// an invalid first one or a repeat is flagged (max_age_invalid,
/// s_maxage_invalid, freshness_repeated).
CacheControl parse_cache_control(std::string_view value);

}  // namespace spe
