// The Collector's provenance stamps: X-SPE-Fetch names the origin fetch a
// reply came from, X-SPE-Validated the last time the origin confirmed a
// stored copy (a 304). Both read "<collector id>.<serial>; t=<unix s.ms>".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

struct FetchStamp {
    std::string id;         // "<collector id>.<serial>", unique per origin fetch
    std::string collector;  // "<start time hex>-<pid hex>": which Collector process
    std::uint64_t serial = 0;
    double time = 0;  // unix seconds of the fetch
};

/// The stamp, or nullopt when the value does not have that form.
std::optional<FetchStamp> parse_fetch_stamp(std::string_view value);

}  // namespace spe
