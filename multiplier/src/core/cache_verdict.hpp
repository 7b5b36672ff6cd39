// The cache-rule judge's verdict on one reply: the record's `cache` object.
// Plain data the judge (judge/cache_judge.hpp) fills in and the log writes.
#pragma once

#include "core/cache_headers.hpp"

#include <boost/container/static_vector.hpp>
#include <boost/static_string/static_string.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spe {

/// The longest id an X-SPE-Fetch stamp may have (judge/fetch_stamp.hpp): the
/// Collector writes at most 8 + 1 + 8 hex digits, a dot and a 64-bit serial (38 characters).
inline constexpr std::size_t kMaxFetchId = 48;

/// Where a reply came from, as its fetch stamp shows (the record's `provenance`).
enum class Provenance {
    none,          // no stamp: not from the origin (an error page, a synthetic reply)
    origin,        // a fetch the Multiplier saw
    unknown,       // a valid stamp of a fetch it never saw (judged from the reply's own header)
    not_modified,  // a 304 without a stamp (no body from any fetch)
    corrupt,       // a stamp that does not parse or names another Collector or an impossible time
};

/// The record's word for it (docs/log-format.md; the log schema's enum).
constexpr std::string_view to_string(Provenance p) {
    switch (p) {
        case Provenance::origin:
            return "origin";
        case Provenance::unknown:
            return "unknown";
        case Provenance::not_modified:
            return "not-modified";
        case Provenance::corrupt:
            return "corrupt";
        case Provenance::none:
            break;
    }
    return "none";
}

/// What a cache said it did (Cache-Status, RFC 9211, or X-Cache): the record's `claim`.
/// `revalidated`: it forwarded and its parent answered 304 (Cache-Status fwd-status=304), so the
/// stored copy it served was validated during this request.
enum class CacheClaim { none, hit, miss, revalidated };

/// The record's word for it; empty for none (the record leaves the member out).
constexpr std::string_view to_string(CacheClaim c) {
    switch (c) {
        case CacheClaim::hit:
            return "hit";
        case CacheClaim::miss:
            return "miss";
        case CacheClaim::revalidated:
            return "revalidated";
        case CacheClaim::none:
            break;
    }
    return {};
}

enum class RuleSeverity { violation, advisory };

/// A rule of the cache-rule judge as its catalogue writes it (kCacheRules, judge/cache_rule_catalogue.hpp:
/// the one place a rule's id and section are written).
struct CacheRule {
    std::string_view id;
    std::string_view section;  // RFC 9111's, or another RFC's named first: "9110 9.3.2"
    RuleSeverity severity;
    std::string_view meaning;  // what a reply that breaks it did
};

/// One rule a reply broke (or, for an advisory, a SHOULD it did not follow).
struct Finding {
    /// Made only from the catalogue's row (cache_rule("...")): its id and section are the row's, so the
    /// section a record shows is always the catalogue's, and a call site names the rule alone.
    Finding(const CacheRule& row, std::string why) : rule(row.id), section(row.section), reason(std::move(why)) {}

    std::string_view rule;     // stable id, e.g. "no-store"
    std::string_view section;  // the catalogue's, e.g. "5.2.2.5"
    std::string reason;
};

struct CacheVerdict {
    Provenance provenance = Provenance::none;
    boost::static_strings::static_string<kMaxFetchId> fetch;  // the stamp's id; empty: none
    std::optional<double> fetched_at;
    std::optional<double> validated_at;
    /// The Content-Length of the origin's 304 that validated the copy (X-SPE-Validated's length=): a replay of
    /// the exchange sends it again. nullopt: that 304 carried none, or no 304 did.
    std::optional<std::uint64_t> validated_length;
    bool reused = false;
    /// Why the reply could not be judged as a reuse (no stamp, a corrupt one);
    /// empty: it was, or it needed no judging. Never a crash, never dropped.
    std::string unjudged;
    std::optional<double> age_s;
    std::vector<Finding> violations;
    std::vector<Finding> advisories;
    // Rule ids this reply had the chance to break: a few per reply, kept inline
    // (no allocation per verdict; there are fewer rules than places).
    boost::container::static_vector<std::string_view, 24> exercised;
    std::string conservative;  // a missed hit's cause; empty: none
    CacheClaim claim = CacheClaim::none;
    std::string claim_conflict;
    /// Only with violations: the judged headers side by side.
    using Fields = std::vector<std::pair<std::string, std::string>>;
    Fields evidence_served, evidence_reference, evidence_request;
    /// The Collector's reply only, when it was a fresh origin fetch: the origin's
    /// judged header fields, kShownFields (what `./spe repro` has a stand-in
    /// origin answer). Kept as taken (one buffer): written for every request.
    std::optional<CacheHeaders> origin;
    /// Beside `origin`: the names of the fields the origin sent for one hop only (its Connection listed them;
    /// Squid removed them from this reply), as a proxy's parent stamp of the same fetch names them.
    std::string origin_connection;
};

}  // namespace spe
