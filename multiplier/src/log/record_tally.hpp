// What one record adds to the live counters (--metrics-listen): a few numbers
// per leg, taken from the finished record on the thread that formats it (like
// its JSON line, and far cheaper) and carried with it to the writer thread,
// which hands it to a RecordTallySink once the record is written. So the
// counters are updated off the measuring threads, and they count exactly the
// records written.
#pragma once

#include "core/errors.hpp"
#include "core/measurement.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace spe {

/// One leg (the Collector's or a proxy's) as the counters see it.
struct LegTally {
    ResultClass result = ResultClass::ok;
    LegError error = LegError::none;
    std::uint64_t header_bytes = 0;
    std::uint64_t body_bytes = 0;
    std::int64_t connect_us = -1;  // -1: none, or a reused connection (only fresh connects are timed)
    std::int64_t ttfb_us = -1;     // -1: no first byte
    std::int64_t total_us = -1;    // -1: not measured
    // The judge's findings, by the catalogue's own rule ids (judge/cache_rule_catalogue.hpp: static strings).
    std::vector<std::string_view> violations;
    std::vector<std::string_view> advisories;
};

/// One record: its Collector leg and, in the configuration's order, its proxies' legs
/// (none when the request had no fan-out).
struct RecordTally {
    LegTally collector;
    std::vector<LegTally> proxies;
    std::int64_t client_held_us = -1;  // -1: the client was not held before this request
};

/// The record's tally. The Collector's leg is the reference, so its class is
/// OK unless it failed, then the class its error gives a proxy's leg.
RecordTally tally_of(const RequestRecord& record);

/// Where the writer thread hands each written record's tally.
class RecordTallySink {
public:
    virtual ~RecordTallySink() = default;
    virtual void add(const RecordTally& tally) = 0;
};

}  // namespace spe
