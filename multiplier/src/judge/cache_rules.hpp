// RFC 9111 as a judge of one reused reply: given the origin fetch a reply came
// from (its own headers, its time, the request that caused it), the request it
// now answers and what the cache said, which rules allowed the reuse and which
// it broke. Pure functions: cache_judge.hpp keeps the state they need.
#pragma once

#include "core/cache_verdict.hpp"
#include "core/compared_headers.hpp"
#include "judge/cache_facts.hpp"
#include "judge/fetch_stamp.hpp"
#include "judge/parent_stamp.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spe {

/// One rule asked of one reply: whether the reply had the chance to break it, and whether it did.
struct RuleJudgement {
    bool exercised = false;
    std::optional<Finding> finding;
};

/// The origin's caching fields of a fetch, parsed once (every reuse of the
/// fetch is judged by them).
struct OriginFacts {
    CacheControl cc;
    std::optional<double> date;
    std::optional<double> expires;  // nullopt with has_expires: invalid, already expired (RFC 9111 5.3)
    bool has_expires = false;
    bool expires_repeated = false;  // several Expires values: `expires` is the first (RFC 9111 4.2.1)
    std::optional<double> last_modified;
    std::optional<double> age;      // the Age the first copy seen carried
    std::vector<std::string> vary;  // the lowercase names its Vary lists
};

/// The request a cache received a copy for (what it stored it under).
struct StoredFor {
    bool authorization = false;
    bool no_store = false;
    VaryValues vary;  // that request's values of the fields the reply's Vary names
    /// When that request left for the cache (the Multiplier's clock): the copy was stored no earlier.
    double sent_at = 0;
};

/// An origin fetch as the judge knows it: the stamp and the origin's reply
/// header (as first seen).
struct KnownFetch {
    FetchStamp stamp;
    unsigned status = 0;
    CacheHeaders headers;
    double first_seen = 0;    // when the Multiplier first saw a reply with this stamp
    bool seen_fresh = false;  // first seen as a fetch made for the request it answered

    /// `headers` parsed, on first use (the header must not change after).
    const OriginFacts& facts() const;

private:
    mutable std::optional<OriginFacts> facts_;
};

/// Everything that bears on reusing a stored copy for one request at one moment.
struct ReuseQuestion {
    const KnownFetch& fetch;
    const RequestFacts& request;
    /// The request the judged cache received this copy for; nullptr: unknown,
    /// and the rules that depend on it (Authorization, Vary, request no-store)
    /// are not judged.
    const StoredFor* stored_for = nullptr;
    double at = 0;                         // when the reply was served (unix s)
    double request_at = 0;                 // when the client's request arrived
    std::optional<double> validated_at;    // X-SPE-Validated on the served copy
    std::optional<double> invalidated_at;  // this cache's last successful unsafe request to the URI
    /// The served reply's Content-Encoding (for Vary: Accept-Encoding, judged by
    /// whether this request accepts it).
    std::optional<std::string_view> content_encoding;
    /// What the cache's parent sent it with this copy (X-SPE-Parent on the served reply); nullptr:
    /// unknown (the Collector's own reply, a stock Collector), and the origin's Age and Date count.
    const ParentStamp* parent = nullptr;
};

/// How old and how long-lived a stored copy is, per RFC 9111 4.2.
struct Freshness {
    double lifetime = 0;
    std::string_view source;     // "s-maxage", "max-age", "invalid" (4.2.1), "expires", "heuristic", "none"
    double age = 0;              // current_age at the question's moment
    bool validated_now = false;  // the origin confirmed the copy during this request
};

Freshness freshness(const ReuseQuestion& q);

/// The rules that forbid answering `q.request` with the stored copy without
/// validating it: empty when a correct shared cache may reuse it. Advisories
/// go to `advisories`: heuristic freshness beyond 4.2.2's suggestion, and the
/// request's own directives (no-store, no-cache, max-age), which RFC 9111
/// 5.2.1 makes advisory ("caches MAY implement them").
std::vector<Finding> reuse_barriers(const ReuseQuestion& q, std::vector<Finding>* advisories = nullptr);

/// What a reused reply itself must carry: Age (RFC 9111 4, 5.1).
std::optional<Finding> age_finding(const ReuseQuestion& q, unsigned reply_status,
                                   std::optional<std::string_view> reply_age);

/// Whether the parent sent a Date its child must keep: a valid HTTP-date. One that is missing
/// or invalid the child may add or replace (RFC 9110 6.6.1).
bool date_to_keep(const ParentStamp& parent);

/// A reused reply carries the Date its cache received (RFC 9111 4 and 3.2: stored
/// fields are sent as stored, Age aside; RFC 9110 6.6.1): judged against its parent's,
/// when that is one to keep (date_to_keep).
std::optional<Finding> date_finding(const ParentStamp& parent, std::optional<std::string_view> served_date);

/// Whether a cache may leave out or replace a field of a stored reply it reuses: hop-by-hop
/// fields, the ones each hop writes itself (Age, Date, Via, Warning, Server, Content-Length,
/// Accept-Ranges), the claims of its parent (X-Cache, Cache-Status) and SPE's stamps.
bool field_may_differ(std::string_view lower_name);

/// A reused reply keeps every end-to-end field its parent sent and the cache had to store
/// (RFC 9111 3.1), Set-Cookie included. `served_names`: the served reply's field names
/// (CacheHeaders::field_names); `cc`: the stored reply's Cache-Control (no-cache="..."
/// and private="..." let a cache leave fields out: then nothing is judged).
std::optional<Finding> stored_fields_finding(const ParentStamp& parent, const FieldNameSet& served_names,
                                             const CacheControl& cc);

/// A field its parent's Connection listed (ParentStamp::connection, patch 0023) was for that hop only: a
/// proxy removes it before it forwards the reply (RFC 9110 7.6.1) and never stores it (RFC 9111 3.1), so
/// no reply of the proxy's, a miss or a reuse, carries it. Names a proxy may write for its own hop
/// (field_may_differ) are not judged. `served_names`: the served reply's field names.
std::optional<Finding> connection_fields_finding(const ParentStamp& parent, const FieldNameSet& served_names);

/// The fields a stored reply's qualified private="..." or no-cache="..." names, on a copy reused
/// without validating it during this request: a shared cache does not store the first (RFC 9111
/// 5.2.2.7) and does not send the second unvalidated (5.2.2.4). `served_names`: the served reply's
/// field names. A finding per directive whose fields the reply carries.
std::vector<Finding> qualified_fields_findings(const CacheControl& cc, const FieldNameSet& served_names);

/// After a 304, a stored reply's fields are updated from it before it is served (RFC 9111
/// 4.3.4). `stored`: the fetch's fields as first seen; `updated`: the Collector's reply to this
/// request, which merged the origin's 304; `served`: the cache's reply of the same fetch;
/// `parent`: what the cache's parent sent it with the 304 it merged (its X-SPE-Parent); nullptr
/// when only the cache's claim shows it revalidated (the parent's port sent the origin's 304).
/// A finding when a judged field the origin's 304 changed, which the parent's 304 carried,
/// is served with its old value. The stamp names the parent's fields, not their values:
/// the value the parent sent is taken as the Collector's in `updated` (one stored reply).
std::optional<Finding> header_update_finding(const CacheHeaders& stored, const CacheHeaders& updated,
                                             const CacheHeaders& served, const ParentStamp* parent);

/// The same for the other compared end-to-end fields (extension ones included, `X-Version`): `first` as
/// the fetch first came, `updated` as the Collector serves it after the origin's 304, `served` the
/// proxy's copy. Named only when the 304 changed the field and the copy still carries the first value
/// exactly; a field the parent's 304 (when known) did not carry is not updated (RFC 9111 3.2).
std::optional<Finding> field_update_finding(const ComparedHeaders& first, const ComparedHeaders& updated,
                                            const ComparedHeaders& served, const ParentStamp* parent);

/// A 304 sent to a conditional request must match its validators (RFC 9111
/// 4.3.2): the ETag among If-None-Match, or not modified since If-Modified-Since.
/// With If-None-Match, If-Modified-Since must be ignored (RFC 9110 13.2.2): a
/// 304 that only the date would allow is `validator-precedence`.
std::optional<Finding> not_modified_finding(const RequestFacts& request, const CacheHeaders& reply,
                                            const CacheHeaders* fetch);

/// A 304 carries the ETag and Vary a 200 would have had (RFC 9110 15.4.5):
/// those of the stored reply it stands for.
std::optional<Finding> not_modified_fields_finding(const CacheHeaders& reply, const CacheHeaders& stored);

/// A 200 to a GET with If-None-Match that matches its ETag and an If-Modified-Since it is modified
/// since: the cache evaluated the date, which beside If-None-Match a recipient must ignore (RFC 9110 13.2.2).
std::optional<Finding> full_reply_precedence_finding(const RequestFacts& request, const CacheHeaders& reply);

}  // namespace spe
