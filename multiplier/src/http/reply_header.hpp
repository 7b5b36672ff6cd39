// What the Multiplier takes from a reply header, the Collector's or a proxy's.
#pragma once

#include "core/measurement.hpp"
#include "core/message_types.hpp"
#include "core/steady_clock.hpp"
#include "http/field_view.hpp"
#include "http/header_policy.hpp"

#include <string>
#include <string_view>

namespace spe {

/// What a final reply header tells: status, version, the compared headers, the
/// Collector's fetch stamp (X-SPE-Fetch) and the replay port's refusal
/// (X-SPE-Replay-Refused), if any; with `cache_fields`, what the cache-rule judge reads.
void take_header(Measure& m, unsigned status, unsigned version, FieldViews fields, const HeaderPolicy& policy,
                 bool cache_fields);
/// The same from a header Beast parsed (the Collector's reply, which is relayed).
void take_header(Measure& m, const http::response_header<>& h, const HeaderPolicy& policy, bool cache_fields);

/// A status code is three digits from 100 (RFC 9110 15); Beast's parser takes any three, so
/// a reply of "099" is malformed to both legs alike, neither interim nor final.
inline bool status_code_valid(unsigned status) {
    return status >= 100;
}

/// The record keeps at most this many interim (1xx) replies per leg.
inline constexpr std::size_t kMaxInterims = 8;
/// Records an interim reply of `status` that arrived now, timed from `started`.
void note_interim(Measure& m, unsigned status, Clock::time_point started);

/// Takes the judged fields of a reply header (repeated fields joined with ", ").
CacheHeaders take_cache_headers(FieldViews fields);
inline CacheHeaders take_cache_headers(const boost::beast::http::fields& fields) {
    return take_cache_headers(field_views(fields));
}

/// Serialized reply header, for mismatch captures.
std::string header_text(const http::response_header<>& h);
/// The same text from a header's parts, byte for byte as Beast writes it: an empty
/// reason is written as Beast's obsolete_reason of the status, a repeated field
/// beside the first of its name, values as given.
std::string header_text(unsigned version, unsigned status, std::string_view reason, FieldViews fields);

}  // namespace spe
