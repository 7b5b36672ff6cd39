// What a cache says of its own reply: Cache-Status (RFC 9211) or X-Cache ("HIT from name"), read
// for every reply the judge sees. A claim is no rule of RFC 9111: the judge weighs it against what
// the stamps show (cache_judge.cpp), the rules are cache_rules.hpp's.
#pragma once

#include "core/cache_headers.hpp"
#include "core/cache_verdict.hpp"

#include <string>
#include <vector>

namespace spe {

/// A cache's own claim (Cache-Status, RFC 9211, or X-Cache): a hit, a miss or
/// none, ignoring the entries the Collector put there (`upstream_names`).
CacheClaim cache_claim(const CacheHeaders& reply, const std::vector<std::string>& upstream_names);

/// The cache names in a reply's Cache-Status and X-Cache ("HIT from NAME").
std::vector<std::string> claim_names(const CacheHeaders& reply);

}  // namespace spe
