// What the Multiplier takes from a reply header, the Collector's or a proxy's.
#pragma once

#include "header_policy.hpp"
#include "measurement.hpp"
#include "message_types.hpp"

#include <string>

namespace spe {

/// What a final reply header tells: status, version, the compared headers and
/// the Collector's fetch stamp (X-SPE-Fetch), if any; with `cache_fields`, what
/// the cache-rule judge reads.
void take_header(Measure& m, const http::response_header<>& h, const HeaderPolicy& policy, bool cache_fields);

/// Serialized reply header, for mismatch captures.
std::string header_text(const http::response_header<>& h);

}  // namespace spe
