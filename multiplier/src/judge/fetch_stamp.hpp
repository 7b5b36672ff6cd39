// The Collector's provenance stamps: X-SPE-Fetch names the origin fetch a
// reply came from, X-SPE-Validated the last time the origin confirmed a
// stored copy (a 304). Both read "<collector id>.<serial>; t=<unix s.ms>", X-SPE-Validated
// with "; length=<n>" after it when the origin's 304 carried a Content-Length (patch 0027).
#pragma once

#include "core/cache_verdict.hpp"

#include <boost/static_string/static_string.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace spe {

struct FetchStamp {
    /// The longest id a stamp may have (kept in the record's verdict too).
    static constexpr std::size_t kMaxId = kMaxFetchId;
    // Kept inline: the judge parses five stamps per request and keeps thousands.
    boost::static_strings::static_string<kMaxId> id;  // "<collector id>.<serial>", unique per origin fetch
    std::uint8_t collector_length = 0;
    std::uint64_t serial = 0;
    double time = 0;  // unix seconds of the fetch

    /// "<start time hex>-<pid hex>": which Collector process made the fetch.
    std::string_view collector() const { return {id.data(), collector_length}; }
};

/// The stamp, or nullopt when the value does not have that form. Parameters after the time are
/// not the stamp's identity (validation_length reads the one there is).
std::optional<FetchStamp> parse_fetch_stamp(std::string_view value);

/// The Content-Length the origin's 304 carried, from an X-SPE-Validated value's "length=" parameter;
/// nullopt when it carried none (or the value is no stamp).
std::optional<std::uint64_t> validation_length(std::string_view value);

/// Unix seconds written as "<digits>[.<digits>]", or nullopt: the stamp's
/// time, read exactly as a decimal (the same double as from_chars gives).
std::optional<double> parse_unix_seconds(std::string_view text);

}  // namespace spe
