// The cache-rule judge: traces every reply to the origin fetch it came from
// (the Collector's X-SPE-Fetch stamp) and judges each reuse of a stored reply
// against RFC 9111 (cache_rules.hpp), for each proxy under test and for the
// Collector itself. It keeps, bounded, what a judgement needs beyond the
// record: the fetches seen (their origin headers and causing request), each
// cache's last copy of each URL, and each cache's successful unsafe requests.
// Shared by the fan-out threads: one mutex; the work is a few map lookups per
// reply, done off the client's path (at the end of a fan-out).
#pragma once

#include "core/cache_verdict.hpp"
#include "core/measurement.hpp"
#include "core/url_key.hpp"
#include "core/wall_clock.hpp"
#include "judge/cache_rules.hpp"
#include "judge/recent_table.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace spe {

/// A method whose success invalidates stored copies of its URI (RFC 9111 4.4; RFC 9110 9.2.1).
bool is_unsafe_method(std::string_view method);

class FetchMemory;

class CacheJudge {
public:
    /// `caches`: the proxies under test, in the record's order; `capacity`:
    /// how many fetches (and URLs per cache) are remembered.
    explicit CacheJudge(std::vector<std::string> caches, std::size_t capacity = 16384);

    /// A cache's reply to an unsafe request arrived: a 2xx or 3xx invalidates
    /// its stored copies of the URI (RFC 9111 4.4). `cache`: -1 = the Collector.
    void note_unsafe(int cache, const std::string& url, unsigned status, double at);
    /// The Collector's reply to the client's unsafe request `record` is in.
    void note_collector_unsafe(const RequestRecord& record);
    /// Judges the record's replies (collector.cache and every proxies[i].cache). `fetches`: the first reply
    /// of each fetch (the validator's), for the end-to-end fields a 304 updated; nullptr: those not judged.
    void judge(RequestRecord& record, std::string_view header_block, const FetchMemory* fetches = nullptr);

private:
    /// The copy a cache last passed on for a URL, and whether it ever served it again (so surely kept it).
    struct LastCopy {
        std::uint64_t fetch = 0;  // serial
        bool reused = false;
        // When the cache last said it revalidated this copy (Cache-Status fwd-status=304), 0: never. A cache
        // that keeps its stored header after its parent's 304 (nginx) shows it on no later reuse of the copy.
        double claimed_validation = 0;
    };
    /// What one cache did, as far as a verdict needs it. Fetches are named by
    /// their serial (one Collector; a stamp of another is corrupt).
    struct CacheMemory {
        explicit CacheMemory(std::size_t capacity) : deliveries(capacity), last_copy(capacity), invalidated(capacity) {}
        // The request it received each fetch for (when it passed it on, not
        // from its own store): what it stored the copy under. A proxy's forward
        // may differ from the client's request, so the request that made the
        // Collector fetch tells nothing about what the proxy was asked.
        RecentTable<StoredFor> deliveries;  // by fetch serial
        // Keyed by a 64-bit hash of the URL (UrlKey): no copy of the URL per entry.
        RecentTable<LastCopy> last_copy;  // url -> the fetch it last served
        RecentTable<double> invalidated;  // url -> when
    };

    /// One record being judged: what every reply's verdict reads.
    struct Case {
        const RequestRecord& record;
        const RequestFacts& request;
        UrlKey url;
        std::vector<std::string> upstream_claims;   // the Collector's names in claim headers
        std::optional<FetchStamp> reference_stamp;  // the Collector's reply's
        const FetchMemory* fetches = nullptr;       // the first reply of each fetch, if known

        /// The stamp `text` names, parsed once per record for the reference's
        /// and for consecutive replies with the same one (proxies serving one fetch).
        std::optional<FetchStamp> stamp(std::string_view text);
        std::string_view last_text = {};  // the last stamp stamp() parsed
        std::optional<FetchStamp> last_stamp = {};
    };

    const KnownFetch* remember(const FetchStamp& stamp, const Measure& reply, const ParentStamp* parent,
                               bool seen_fresh, double at);
    const KnownFetch* find_fetch(std::uint64_t serial) const;
    /// The request `memory`'s cache received `fetch` for, if known.
    static const StoredFor* stored_for(const KnownFetch& fetch, const CacheMemory& memory);
    void remember_delivery(CacheMemory& memory, const KnownFetch& fetch, const RequestFacts& request, double sent_at);
    /// One cache's reply being judged, and where that cache's memory is.
    struct Leg {
        const Measure& reply;
        const Measure* reference;  // the Collector's reply; nullptr: this is it
        CacheMemory& memory;
        double served_at;  // when the reply's first byte came (unix s)
        double sent_at;    // when the request left for this cache
        // It went before the cache had answered an earlier request of the client for the same URL, or an
        // unsafe one (ProxyResult::overtook_related): what the cache did before is not what it saw before.
        bool overtook = false;
    };

    CacheVerdict judge_reply(Case& c, const Leg& leg);
    /// What the reply shows whatever fetch it came from: its claim and validation, the rules of a reply to
    /// HEAD and to a conditional request.
    void judge_reply_itself(CacheVerdict& v, const Case& c, const Leg& leg) const;
    /// A 304 to a conditional request: its validators (RFC 9111 4.3.2), and the fields of the stored reply it
    /// stands for (RFC 9110 15.4.5), that copy being the one the cache last passed on for the URL.
    void judge_not_modified(CacheVerdict& v, const Case& c, const Leg& leg) const;
    /// The reply's fetch stamp when it is this run's Collector's (a reference's stamp names it); otherwise
    /// nothing, the verdict saying why the reply is not judged as a reuse (no stamp, a corrupt one).
    std::optional<FetchStamp> trusted_stamp(CacheVerdict& v, Case& c, const Leg& leg);
    /// Whether a stamp's `collector` is this run's Collector: one a reference's stamp named, this one
    /// if it is on the reference (`on_reference`: then remembered).
    bool is_ours(std::string_view collector, bool on_reference);
    /// A reply from a fetch of this run: its provenance, whether it is a reuse and what that broke, what
    /// it could have broken; what the cache received and passed on is remembered for the next requests.
    void judge_stamped(CacheVerdict& v, Case& c, const Leg& leg, const FetchStamp& stamp);
    /// The fetch the reply came from, remembered (nullptr: another Collector process's serial), and the
    /// verdict's provenance from it.
    const KnownFetch* trace(CacheVerdict& v, const RequestRecord& record, const Leg& leg, const FetchStamp& stamp,
                            const ParentStamp* parent);
    /// A reuse of a known fetch: the rules it broke and, with violations, the evidence. `parent`: what the
    /// cache's parent sent it with the copy (X-SPE-Parent), nullptr for the Collector.
    void judge_reused_copy(CacheVerdict& v, const Case& c, const Leg& leg, const KnownFetch& fetch,
                           const ParentStamp* parent, std::optional<double> invalidated);
    static bool is_reuse(const Case& c, const Measure& reply, const Measure* reference, const FetchStamp& stamp);
    /// RFC 9110 15.2 on a proxy's leg (interim_rule.hpp).
    static void add_interim_finding(CacheVerdict& v, const Measure& reference, const Measure& reply, double sent_at);
    void judge_reuse(CacheVerdict& v, const ReuseQuestion& q, const Measure& reply);
    /// The fields a qualified private or no-cache named, on a copy served unvalidated.
    static void judge_qualified_fields(CacheVerdict& v, const ReuseQuestion& q, const Measure& reply);
    /// A proxy's reuse of the fetch the Collector revalidated for this request (RFC 9111 4.3.4), by what
    /// `parent` (the served copy's X-SPE-Parent) shows its parent sent it.
    static void judge_header_update(CacheVerdict& v, const Case& c, const KnownFetch& fetch, const Measure& reply,
                                    const Measure& reference, const ParentStamp& parent);
    void judge_candidate(CacheVerdict& v, const Case& c, CacheMemory& memory, double served_at,
                         std::optional<double> invalidated, const FetchStamp& served);
    /// The copy the cache last served for `url`; `claimed_validation`: when it said it revalidated it (0: not now).
    void remember_copy(CacheMemory& memory, UrlKey url, std::uint64_t fetch, bool reused, double claimed_validation);
    /// The last revalidation the cache claimed for this copy, if later than the one on the reply.
    static void recall_claimed_validation(CacheVerdict& v, const CacheMemory& memory, UrlKey url, std::uint64_t fetch);
    CacheMemory& memory_of(int cache) { return cache < 0 ? collector_ : caches_[static_cast<std::size_t>(cache)]; }

    std::mutex mutex_;
    std::vector<std::string> names_;
    RecentTable<KnownFetch> fetches_;         // by serial
    std::vector<std::string> collector_ids_;  // the Collector processes seen on references
    std::vector<CacheMemory> caches_;
    CacheMemory collector_;
};

}  // namespace spe
