// The Multiplier's live counters (--metrics-listen, docs/metrics.md): per
// proxy and for the Collector, requests, results by class, the judge's
// findings by rule, bytes, errors by kind and latency histograms, and the
// holds of the client (SPE's measuring behind it), updated on
// the record writer's thread from each written record's tally
// (log/record_tally.hpp), never on a measuring thread; and the page a scrape
// gets, rendered from a copy taken under a short lock.
#pragma once

#include "core/errors.hpp"
#include "core/measurement.hpp"
#include "judge/cache_rule_catalogue.hpp"
#include "log/record_tally.hpp"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace spe {

/// Every result class and every leg error, in enum order (the label values a series is made for at start).
inline constexpr std::array kResultClasses = {ResultClass::ok,
                                              ResultClass::status_code_mismatch,
                                              ResultClass::header_mismatch,
                                              ResultClass::body_mismatch,
                                              ResultClass::other_fetch,
                                              ResultClass::no_response,
                                              ResultClass::protocol_error,
                                              ResultClass::replay_refused,
                                              ResultClass::not_sent};
inline constexpr std::array kLegErrors = {LegError::refused,          LegError::timeout,        LegError::reset,
                                          LegError::closed,           LegError::truncated,      LegError::bad_header,
                                          LegError::header_too_large, LegError::body_too_large, LegError::bad_body,
                                          LegError::aborted,          LegError::busy,           LegError::extra_data,
                                          LegError::not_sent,         LegError::replay_refused};

/// Upper bounds (seconds) of the latency buckets: a hit from memory takes well under a millisecond, a miss up to
/// seconds.
inline constexpr std::array kLatencyBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                              0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

/// Observations per bucket (not cumulative; the last is above every bound) and their sum.
struct LatencyHistogram {
    std::array<std::uint64_t, kLatencyBounds.size() + 1> counts{};
    double sum = 0;

    void observe_us(std::int64_t us);
};

/// One leg's series: the Collector's or one proxy's.
struct LegSeries {
    std::uint64_t requests = 0;
    std::array<std::uint64_t, kResultClasses.size()> results{};
    std::array<std::uint64_t, kCacheRules.size()> findings{};  // by the catalogue's order
    std::array<std::uint64_t, kLegErrors.size()> errors{};
    std::uint64_t header_bytes = 0;
    std::uint64_t body_bytes = 0;
    LatencyHistogram connect, first_byte, total;

    void add(const LegTally& leg);
};

/// The holds of the client (the records' client_held_us): SPE's measuring fell behind, the client waited.
struct ClientHolds {
    std::uint64_t count = 0;
    std::uint64_t held_us = 0;

    void add(std::int64_t us);
};

/// What the process reports of itself at a scrape (read then, not from the records).
struct ProcessGauges {
    std::uint64_t client_connections = 0;
    std::uint64_t requests_in_flight = 0;
    std::uint64_t records_written = 0;
    std::uint64_t records_dropped = 0;
    std::uint64_t records_failed = 0;
    std::uint64_t resident_bytes = 0;
};

/// The resident set of this process in bytes (/proc/self/statm), 0 if it cannot be read.
std::uint64_t resident_memory_bytes();

class RunMetrics : public RecordTallySink {
public:
    /// `proxies`: the proxies' names in the configuration's order (a record's legs come in it).
    explicit RunMetrics(std::vector<std::string> proxies);

    /// The writer thread: one written record.
    void add(const RecordTally& tally) override;
    /// The page a scrape gets (Prometheus text format 0.0.4).
    std::string render(const ProcessGauges& process) const;

private:
    const std::vector<std::string> names_;  // "collector", then the proxies
    mutable std::mutex mutex_;              // the writer thread's updates against a scrape's copy
    std::vector<LegSeries> series_;         // as names_
    ClientHolds holds_;
};

}  // namespace spe
