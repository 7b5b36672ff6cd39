// The first reply a client got from each origin fetch (by its X-SPE-Fetch
// stamp), bounded: what a proxy's reply must match when it names another fetch
// than the Collector's reply it is compared with (validator.hpp), and the
// fields a copy of that fetch held before a 304 updated them (the cache judge).
#pragma once

#include "core/measurement.hpp"
#include "judge/fetch_stamp.hpp"
#include "judge/recent_table.hpp"

#include <mutex>
#include <optional>

namespace spe {

class FetchMemory {
public:
    /// `capacity`: the fetches kept, the last ones (the judge's tables' bound).
    explicit FetchMemory(std::size_t capacity = 16384) : fetches_(capacity) {}

    /// Keeps `reference` (status, body MD5, compared headers) as its fetch's
    /// reply, unless that fetch is already kept: the first reply counts, so a
    /// fetch's copy is always checked against what the origin sent first.
    /// Only a whole reply to a GET: a HEAD's or a cut body's MD5 is not the fetch's.
    void remember(std::string_view method, const Measure& reference);

    /// The kept reply of the fetch `reply` names when that is not `reference`'s
    /// fetch; nullopt when both name the same fetch, either names none, or the
    /// fetch is not kept (never a client's, or forgotten).
    std::optional<Measure> other_fetch(const Measure& reference, const Measure& reply) const;

    /// The compared header fields of the first reply a client got from `fetch` (as the origin sent it,
    /// before any 304 updated the Collector's copy); nullopt when that fetch is not kept.
    std::optional<ComparedHeaders> first_headers(const FetchStamp& fetch) const;

private:
    /// What the validator compares of the fetch's first reply. Not a whole Measure: its 1.7 KB (the
    /// judge's verdict and fields among them) made the table 29 MB, written at a random place per request.
    struct Kept {
        FetchStamp stamp;
        std::optional<unsigned> status;
        std::optional<std::string> md5;
        ComparedHeaders headers;
        std::optional<std::string> fetch;
    };
    mutable std::mutex mutex_;   // the fan-out threads share it
    RecentTable<Kept> fetches_;  // by fetch serial; the id is checked too (another Collector process)
};

}  // namespace spe
