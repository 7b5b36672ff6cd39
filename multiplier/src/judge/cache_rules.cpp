#include "judge/cache_rules.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"
#include "judge/cache_rule_catalogue.hpp"
#include "judge/delta_seconds.hpp"

#include "http/field_equivalence.hpp"
#include "http/field_list.hpp"
#include "http/http_date.hpp"

#include <fmt/format.h>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace spe {
namespace {

// Date and Age have one-second resolution and caches round them down, so a
// copy counts as stale only when it is more than this past its lifetime.
constexpr double kSlack = 1.5;

bool heuristically_cacheable(unsigned status) {
    // RFC 9110 15.1.
    switch (status) {
        case 200:
        case 203:
        case 204:
        case 206:
        case 300:
        case 301:
        case 308:
        case 404:
        case 405:
        case 410:
        case 414:
        case 501:
            return true;
        default:
            return false;
    }
}

/// An Age value in seconds (delta_seconds.hpp: the first member; 2^31 and up as 2^31); nullopt when absent
/// or invalid, which RFC 9111 5.1 says a cache SHOULD ignore: no number to make a copy older or younger.
std::optional<double> age_value(std::optional<std::string_view> v) {
    if (!v) return std::nullopt;
    if (const auto n = age_seconds(*v)) return static_cast<double>(*n);
    return std::nullopt;
}

std::optional<double> date_value(std::optional<std::string_view> v) {
    if (!v) return std::nullopt;
    if (auto t = parse_http_date(*v)) return static_cast<double>(*t);
    return std::nullopt;
}

double or_stamp(const std::optional<double>& t, const KnownFetch& f) {
    return t.value_or(f.stamp.time);
}

std::string secs(double s) {
    return fmt::format("{:.1f} s", s);
}

/// The lifetime of a stored reply in a shared cache (RFC 9111 4.2.1), and
/// where it came from. `date`: the Date the cache received (its parent's), else the origin's.
std::pair<double, std::string_view> lifetime_of(const KnownFetch& f, const CacheControl& cc,
                                                std::optional<double> date = std::nullopt) {
    if (cc.s_maxage) return {static_cast<double>(*cc.s_maxage), "s-maxage"};
    // Invalid freshness information (4.2.1), which caches are encouraged to consider stale: no lifetime,
    // whatever Expires says. A valid s-maxage (above) overrides max-age for a shared cache, so only it
    // makes an invalid max-age not count.
    if (cc.s_maxage_invalid || cc.max_age_invalid) return {0, "invalid"};
    if (cc.max_age) return {static_cast<double>(*cc.max_age), "max-age"};
    const auto& o = f.facts();
    const double received_date = date ? *date : or_stamp(o.date, f);
    if (o.has_expires) {
        if (!o.expires) return {0, "expires"};  // invalid: already expired (5.3)
        return {std::max(0.0, *o.expires - received_date), "expires"};
    }
    if (heuristically_cacheable(f.status) || cc.public_) {
        if (o.last_modified) return {std::max(0.0, 0.1 * (received_date - *o.last_modified)), "heuristic"};
        return {0, "heuristic"};
    }
    return {0, "none"};
}

/// The age a copy had when the origin last sent or confirmed it (RFC 9111
/// 4.2.3's corrected initial age): the Age it arrived with (the first copy
/// seen carried it, plus the time between the fetch and that sighting, taken
/// off again), or its apparent age from Date. After a validation the 304's
/// Date counts, which the Collector's stamp does not carry: a whole second
/// below the validation time, as an origin's clock gives it.
double initial_age(const KnownFetch& f, std::optional<double> validated_at) {
    double received = 0;
    if (const auto& age = f.facts().age) received = std::max(0.0, *age - std::max(0.0, f.first_seen - f.stamp.time));
    if (validated_at && *validated_at > f.stamp.time)
        return std::max(received, *validated_at - std::floor(*validated_at));
    const double apparent = std::max(0.0, f.stamp.time - or_stamp(f.facts().date, f));
    return std::max(apparent, received);
}

bool weak_match(std::string_view a, std::string_view b) {
    auto opaque = [](std::string_view t) {
        if (t.substr(0, 2) == "W/") t.remove_prefix(2);
        return t;
    };
    return opaque(a) == opaque(b);
}

/// Whether a weight (RFC 9110 12.4.2, the q parameter) refuses what it weighs: "0" and "0." with
/// only zeros after the dot.
bool refused(const std::optional<std::string>& q) {
    return q && !q->empty() && q->front() == '0' &&
           (q->size() == 1 || ((*q)[1] == '.' && q->find_first_not_of('0', 2) == std::string::npos));
}

/// Whether `request_ae` (Accept-Encoding) accepts `coding` (RFC 9110 12.5.3).
bool accepts_coding(const std::optional<std::string>& request_ae, std::string_view coding) {
    if (coding.empty() || spe::iequals(coding, "identity")) {
        if (!request_ae) return true;
    } else if (!request_ae) {
        return true;  // no Accept-Encoding: any coding is acceptable
    }
    bool star = false, star_zero = false;
    for (const auto member : FieldList(*request_ae)) {
        const auto [name, parameters] = split_parameters(member);
        const bool zero = refused(parameter(parameters, "q"));
        if (spe::iequals(name, coding.empty() ? "identity" : coding)) return !zero;
        if (name == "*") star = true, star_zero = zero;
    }
    if (star) return !star_zero;
    return coding.empty() || spe::iequals(coding, "identity");  // identity is acceptable unless refused
}

std::optional<Finding> vary_finding(const ReuseQuestion& q) {
    const auto& f = q.fetch;
    if (!q.stored_for || !f.headers.vary()) return std::nullopt;
    for (const auto& [name, stored] : q.stored_for->vary) {
        if (name == "*") return Finding{cache_rule("vary"), "the stored reply has Vary: *, which never matches"};
        if (name == "accept-encoding") {
            // Caches may normalize Accept-Encoding (Varnish does): what counts
            // is whether this request accepts the coding it was served.
            const auto ae = request_field(q.request, "accept-encoding");
            const auto coding = q.content_encoding.value_or("");
            if (!accepts_coding(ae, coding))
                return Finding{cache_rule("vary"),
                               fmt::format("served Content-Encoding '{}' to a request with Accept-Encoding '{}'",
                                           coding.empty() ? "identity" : coding, ae.value_or("(none)"))};
            continue;
        }
        const auto now = selecting_value(q.request, name);
        if (now != stored)
            return Finding{cache_rule("vary"),
                           fmt::format("the stored variant was selected by {}: '{}', this request has '{}'", name,
                                       stored.value_or("(absent)"), now.value_or("(absent)"))};
    }
    return std::nullopt;
}

/// Whether the copy was stale already when it reached the cache (as its parent
/// sent it; without a parent stamp, as the origin sent or last confirmed it):
/// a lifetime no longer than its age on arrival (RFC 9111 4.2). The rounding
/// slack is for copies that were fresh then: one that never was has no fresh
/// moment for Date's and Age's whole seconds to blur.
bool never_fresh(const ReuseQuestion& q, double lifetime) {
    if (lifetime <= 0) return true;
    if (q.parent) {
        // As it reached this cache, from its parent (whose own store may have kept it young or old):
        // Age in whole seconds rounded down, Date rounded down too (up to a second over).
        if (const auto age = age_value(q.parent->age); age && *age >= lifetime) return true;
        const auto date = date_value(q.parent->date);
        return date && q.parent->time - *date >= lifetime + 1;
    }
    const auto& f = q.fetch;
    if (q.validated_at && *q.validated_at > f.stamp.time) return false;  // the 304's own Age and Date are not known
    const auto& o = f.facts();
    // Age counts whole seconds rounded down; the time between the fetch and the
    // copy first seen is taken off again (less than half a second on a fetch).
    if (o.age && *o.age - std::max(0.0, f.first_seen - f.stamp.time) + 0.5 >= lifetime) return true;
    // Date is rounded down too: the apparent age overstates by up to a second.
    return o.date && f.stamp.time - *o.date >= lifetime + 1;
}

/// RFC 9111 4.2.1 lets a cache read repeated freshness by its first occurrence:
/// reusing such a copy is the cache's choice, named as an advisory.
std::optional<Finding> ambiguous_freshness(const OriginFacts& o) {
    if (o.cc.freshness_repeated || o.expires_repeated)
        return Finding{cache_rule("duplicate-freshness"),
                       fmt::format("reused by the first of repeated {} (the other reading is stale)",
                                   o.expires_repeated ? "Expires" : "max-age or s-maxage")};
    return std::nullopt;
}

const CacheRule& stale_rule(const CacheControl& cc, std::string_view source) {
    // Stale only because its freshness is invalid: named as that, before what forbids serving it stale.
    if (source == "invalid") return cache_rule("invalid-freshness");
    if (cc.must_revalidate) return cache_rule("must-revalidate");
    if (cc.proxy_revalidate) return cache_rule("proxy-revalidate");
    if (source == "s-maxage") return cache_rule("s-maxage");
    return cache_rule("stale");
}

/// Why a reused copy was stale: how old, how long it was fresh and by what.
std::string stale_reason(const ReuseQuestion& q, const Freshness& fr, bool unfresh) {
    const auto unvalidated = q.validated_at ? "" : "; no validation stamped on the copy";
    if (fr.source == "invalid")
        return fmt::format(
            "reused {} old, but 'Cache-Control: {}' has a {} that is no delta-seconds: invalid "
            "freshness information, which caches are encouraged to consider stale{}",
            secs(fr.age), q.fetch.headers.cache_control().value_or(""),
            q.fetch.facts().cc.s_maxage_invalid ? "s-maxage" : "max-age", unvalidated);
    return fmt::format("stale: {} old, fresh for {} ({}){}{}", secs(fr.age), secs(fr.lifetime), fr.source,
                       unfresh ? "; stale on arrival" : "", unvalidated);
}

/// Staleness the client or the origin allowed (max-stale, stale-while-revalidate).
bool stale_permitted(const ReuseQuestion& q, const CacheControl& cc, double staleness) {
    if (cc.must_revalidate || cc.proxy_revalidate || cc.s_maxage) return false;
    const auto& rc = q.request.cc;
    if (rc.max_stale_any || (rc.max_stale && staleness <= static_cast<double>(*rc.max_stale) + kSlack)) return true;
    return cc.stale_while_revalidate && staleness <= static_cast<double>(*cc.stale_while_revalidate) + kSlack;
}

}  // namespace

const OriginFacts& KnownFetch::facts() const {
    if (!facts_) {
        OriginFacts o;
        o.cc = parse_cache_control(headers.cache_control().value_or(""));
        o.date = date_value(headers.date());
        o.has_expires = headers.expires().has_value();
        o.expires = date_value(headers.expires());
        if (o.has_expires && !o.expires)
            if (const auto first = parse_first_http_date(*headers.expires())) {
                o.expires = static_cast<double>(*first);
                o.expires_repeated = true;
            }
        o.last_modified = date_value(headers.last_modified());
        o.age = age_value(headers.age());
        if (const auto vary = headers.vary()) o.vary = vary_names(*vary);
        facts_ = std::move(o);
    }
    return *facts_;
}

Freshness freshness(const ReuseQuestion& q) {
    const auto& cc = q.fetch.facts().cc;
    Freshness fr;
    const double basis = std::max(q.fetch.stamp.time, q.validated_at.value_or(0));
    fr.validated_now = basis >= q.request_at - 0.005;
    if (q.parent) {
        // The copy as it reached this cache (RFC 9111 4.2.3, the parent's reply as received): its
        // age then, from the Age and Date its parent sent, plus the time it has been resident since.
        // The Collector's proxy ports stand in for the origin: they send the origin's Age and Date,
        // from a copy they may have held a while. In front of the origin that copy would have been
        // new, so its apparent age is the one it had when the origin's reply reached the Collector
        // (clock skew, the way there), not the Collector's time in store as well.
        const auto date = date_value(q.parent->date);
        std::tie(fr.lifetime, fr.source) = lifetime_of(q.fetch, cc, date);
        const double received = age_value(q.parent->age).value_or(0);
        // Validated after its parent sent it, by the cache's own claim: the 304's Age and Date are not known,
        // and its age starts again there (RFC 9111 4.3.4).
        if (q.validated_at && *q.validated_at > q.parent->time) {
            fr.age = std::max(0.0, q.at - *q.validated_at);
            return fr;
        }
        double from_origin = q.fetch.stamp.time;
        if (q.validated_at && *q.validated_at <= q.parent->time) from_origin = std::max(from_origin, *q.validated_at);
        const double apparent = date ? std::max(0.0, std::min(from_origin, q.parent->time) - *date) : 0;
        fr.age = std::max(received, apparent) + std::max(0.0, q.at - q.parent->time);
        return fr;
    }
    std::tie(fr.lifetime, fr.source) = lifetime_of(q.fetch, cc);
    fr.age = initial_age(q.fetch, q.validated_at) + std::max(0.0, q.at - basis);
    return fr;
}

namespace {

std::optional<std::string_view> compared_value(const ComparedHeaders& fields, std::string_view name) {
    const auto it = std::lower_bound(fields.begin(), fields.end(), name,
                                     [](const ComparedHeader& h, std::string_view n) { return h.name < n; });
    if (it == fields.end() || it->name != name) return std::nullopt;
    return it->value;
}

}  // namespace

std::optional<Finding> field_update_finding(const ComparedHeaders& first, const ComparedHeaders& updated,
                                            const ComparedHeaders& served, const ParentStamp* parent) {
    for (const auto& [name, after] : updated) {
        if (parent && !parent->sent(name)) continue;
        const auto before = compared_value(first, name);
        if (!before || *before == after || compared_value(served, name) != before) continue;
        return Finding{cache_rule("header-update"),
                       fmt::format("{} {}: '{}', which the origin's 304 changed from '{}'; the copy updated from it "
                                   "still served '{}'",
                                   parent ? "its parent's 304 during this request carried"
                                          : "it revalidated during this request (Cache-Status fwd-status=304): its "
                                            "parent's 304 carried",
                                   name, after, *before, *before)};
    }
    return std::nullopt;
}

namespace {

/// What forbids storing or reusing the copy at all: the origin's no-store and private, the Authorization of
/// the request it was stored for (RFC 9111 5.2.2.5, 5.2.2.7, 3.5); the request it was stored for saying
/// no-store goes to `request_rules` (5.2.1.5).
void storage_barriers(const ReuseQuestion& q, std::vector<Finding>& out, std::vector<Finding>& request_rules) {
    const auto& cc = q.fetch.facts().cc;
    if (cc.no_store) out.push_back({cache_rule("no-store"), "the origin's reply said no-store: it must not be stored"});
    if (q.stored_for && q.stored_for->no_store)
        request_rules.push_back({cache_rule("request-no-store"), "stored from a request that said no-store"});
    if (cc.private_)
        out.push_back({cache_rule("private"), "the origin's reply said private: a shared cache must not store it"});
    if (q.stored_for && q.stored_for->authorization && !cc.public_ && !cc.s_maxage && !cc.must_revalidate)
        out.push_back({cache_rule("authorization"),
                       "a reply to a request with Authorization, without public, s-maxage or must-revalidate"});
}

/// A copy stored before a successful unsafe request to its URI went through the same cache (RFC 9111 4.4).
std::optional<Finding> invalidation_finding(const ReuseQuestion& q) {
    // When the cache stored (or last had confirmed) this copy: no earlier than the request it got it for left
    // for it (the Multiplier's clock, as the unsafe request's), nor than its parent sent it. The origin's fetch
    // can be older than the cache's copy of it: the Collector may have fetched for the client's request while
    // this cache's turn still waited behind the unsafe one.
    const double basis = std::max({q.fetch.stamp.time, q.validated_at.value_or(0), q.parent ? q.parent->time : 0.0,
                                   q.stored_for ? q.stored_for->sent_at : 0.0});
    if (!q.invalidated_at || *q.invalidated_at <= basis) return std::nullopt;
    return Finding{
        cache_rule("invalidation"),
        fmt::format("stored {} before a successful unsafe request to the same URI", secs(*q.invalidated_at - basis))};
}

/// What asks for validation of a copy served unvalidated, fresh or not: the origin's no-cache (RFC 9111
/// 5.2.2.4); the request's no-cache and max-age go to `request_rules` (5.2.1.4, 5.2.1.1).
void validation_barriers(const ReuseQuestion& q, const Freshness& fr, std::vector<Finding>& out,
                         std::vector<Finding>& request_rules) {
    if (q.fetch.facts().cc.no_cache)
        out.push_back({cache_rule("no-cache"), "the origin's reply said no-cache; served without validation"});
    if (q.request.no_cache())
        request_rules.push_back(
            {cache_rule("request-no-cache"), "the request said no-cache; answered without validation"});
    // max-age=0 asks for validation outright; a larger one for a copy no older.
    const auto& max_age = q.request.cc.max_age;
    if (max_age && (*max_age == 0 || fr.age > static_cast<double>(*max_age) + kSlack))
        request_rules.push_back(
            {cache_rule("request-max-age"),
             fmt::format("the request allowed max-age={}, the copy was {} old", *max_age, secs(fr.age))});
}

/// A copy served stale without permission (RFC 9111 4.2.4, or the directive that forbids it, or its invalid
/// freshness), or, as advisories, beyond heuristic freshness (4.2.2) and by a reading of repeated freshness
/// that 4.2.1 leaves to the cache.
void staleness_barriers(const ReuseQuestion& q, const Freshness& fr, std::vector<Finding>& out,
                        std::vector<Finding>* advisories) {
    const auto& f = q.fetch;
    const auto& cc = f.facts().cc;
    const double staleness = fr.age - fr.lifetime;
    const auto flagged = out.size();
    if (fr.source == "heuristic") {
        if (advisories && f.headers.last_modified() && staleness > kSlack)
            advisories->push_back(
                {cache_rule("heuristic"), fmt::format("heuristic freshness: served {} old, 10 % of (Date - "
                                                      "Last-Modified) is {}",
                                                      secs(fr.age), secs(fr.lifetime))});
    } else if (const bool unfresh = never_fresh(q, fr.lifetime);
               (staleness > kSlack || unfresh) && !stale_permitted(q, cc, staleness)) {
        // Stale by the first of repeated max-age values but fresh by a later one: 4.2.1's lowercase
        // "should" (the first, or stale) leaves the reading to the cache, an advisory. Not when the
        // first is invalid: then both readings say stale.
        if (fr.source != "invalid" && cc.freshness_repeated && cc.freshness_longest && advisories &&
            fr.age - static_cast<double>(*cc.freshness_longest) <= kSlack) {
            advisories->push_back({cache_rule("duplicate-freshness"),
                                   fmt::format("reused {} old by a later max-age or s-maxage ({} s) of repeated "
                                               "ones; stale by the first ({})",
                                               secs(fr.age), *cc.freshness_longest, secs(fr.lifetime))});
            return;
        }
        out.push_back({stale_rule(cc, fr.source), stale_reason(q, fr, unfresh)});
    }
    // Not stale by the first occurrence (or the fallback), but a reading the RFC allows says so.
    if (const auto a = ambiguous_freshness(f.facts()); a && advisories && out.size() == flagged)
        advisories->push_back(*a);
}

}  // namespace

std::vector<Finding> reuse_barriers(const ReuseQuestion& q, std::vector<Finding>* advisories) {
    std::vector<Finding> out;
    // Request directives "are advisory; caches MAY implement them" (RFC 9111
    // 5.2.1): not honouring one is reported, never as a violation.
    std::vector<Finding> ignored_requests;
    auto& request_rules = advisories ? *advisories : ignored_requests;
    storage_barriers(q, out, request_rules);
    if (auto f = invalidation_finding(q)) out.push_back(std::move(*f));
    const auto fr = freshness(q);
    // A copy the origin confirmed during this request was selected by its 304 (RFC 9111 4.3.4), whatever
    // its Vary: a stored reply that does not match (Vary: *, another variant) is what a cache validates.
    if (fr.validated_now) return out;
    if (auto v = vary_finding(q)) out.push_back(std::move(*v));
    validation_barriers(q, fr, out, request_rules);
    staleness_barriers(q, fr, out, advisories);
    return out;
}

std::optional<Finding> age_finding(const ReuseQuestion& q, unsigned reply_status,
                                   std::optional<std::string_view> reply_age) {
    if (reply_status == 304) return std::nullopt;
    const auto fr = freshness(q);
    // A missing Age on a copy younger than the clocks' resolution reads as the
    // Age 0 or 1 a cache would have sent (Squid omits Age 0): not flagged.
    if (!reply_age && fr.age < kSlack) return std::nullopt;
    if (!reply_age)
        return Finding{cache_rule("age"),
                       fmt::format("a reused reply without Age (the copy was {} old)", secs(fr.age))};
    const auto age = age_value(reply_age);
    if (!age)
        return Finding{cache_rule("age"),
                       fmt::format("Age '{}' is no delta-seconds (an Age a recipient ignores)", *reply_age)};
    if (*age + 1 + kSlack < fr.age)
        return Finding{cache_rule("age"), fmt::format("Age {} s, but the copy was {} old", *age, secs(fr.age))};
    return std::nullopt;
}

namespace {

std::optional<std::string_view> last_modified_of(const CacheHeaders& reply, const CacheHeaders* fetch) {
    return reply.last_modified() ? reply.last_modified() : fetch ? fetch->last_modified() : std::nullopt;
}

/// The reply is known to be modified since the request's If-Modified-Since.
bool modified_since(const RequestFacts& request, const CacheHeaders& reply, const CacheHeaders* fetch) {
    const auto since = date_value(request.if_modified_since);
    const auto lm = date_value(last_modified_of(reply, fetch));
    return since && lm && *lm > *since;
}

}  // namespace

bool date_to_keep(const ParentStamp& parent) {
    // RFC 9110 6.6.1: a recipient with a clock MUST add a Date to a response that has none, and MAY replace
    // an invalid one with the time it received the response: only a valid Date must be kept as sent.
    return parent.date && parse_http_date(trim(*parent.date));
}

std::optional<Finding> date_finding(const ParentStamp& parent, std::optional<std::string_view> served_date) {
    if (!date_to_keep(parent)) return std::nullopt;
    if (served_date && trim(*served_date) == trim(*parent.date)) return std::nullopt;
    return Finding{cache_rule("date"),
                   fmt::format("served Date '{}', but the stored reply's Date (its parent's) is '{}'",
                               served_date.value_or("(none)"), *parent.date)};
}

/// Fields a hop writes or may change: hop-by-hop ones, its own Age, Date, Via, Server ..., framing, and
/// Content-Encoding, which a proxy that decodes for a client not accepting the coding drops (a transformation
/// RFC 9110 7.7 allows without no-transform; Varnish gunzips so). The three Proxy-Auth* fields are specific to
/// the proxy a cache forwards through, which RFC 9111 3.1 forbids it to store (unless that proxy is in its key).
bool field_may_differ(std::string_view n) {
    static constexpr std::array<std::string_view, 21> kNames = {"connection",
                                                                "keep-alive",
                                                                "proxy-connection",
                                                                "te",
                                                                "trailer",
                                                                "upgrade",
                                                                "transfer-encoding",
                                                                "proxy-authenticate",
                                                                "proxy-authentication-info",
                                                                "proxy-authorization",
                                                                "age",
                                                                "date",
                                                                "via",
                                                                "warning",
                                                                "server",
                                                                "content-length",
                                                                "content-encoding",
                                                                "accept-ranges",
                                                                "x-cache",
                                                                "x-cache-lookup",
                                                                "cache-status"};
    return n.substr(0, 6) == "x-spe-" || std::find(kNames.begin(), kNames.end(), n) != kNames.end();
}

std::optional<Finding> stored_fields_finding(const ParentStamp& parent, const FieldNameSet& served_names,
                                             const CacheControl& cc) {
    if (cc.no_cache_fields || cc.private_fields) return std::nullopt;
    std::string missing;
    for_each_name(parent.fields, [&](std::string_view name) {
        if (!field_may_differ(name) && !served_names.contains(name))
            missing.append(missing.empty() ? "" : ", ").append(name);
    });
    if (missing.empty()) return std::nullopt;
    return Finding{cache_rule("stored-fields"),
                   fmt::format("its parent sent {}, which the reused reply lacks: a cache stores and sends every "
                               "end-to-end field it received",
                               missing)};
}

std::optional<Finding> connection_fields_finding(const ParentStamp& parent, const FieldNameSet& served_names) {
    std::string kept;
    for_each_name(parent.connection, [&](std::string_view name) {
        if (!field_may_differ(name) && served_names.contains(name)) kept.append(kept.empty() ? "" : ", ").append(name);
    });
    if (kept.empty()) return std::nullopt;
    return Finding{cache_rule("connection-fields"),
                   fmt::format("its parent's Connection listed {}, a field for that hop only, which this reply "
                               "carries: a proxy removes it before forwarding and never stores it (RFC 9111 3.1)",
                               kept)};
}

std::vector<Finding> qualified_fields_findings(const CacheControl& cc, const FieldNameSet& served_names) {
    auto carried = [&](std::string_view named) {
        std::string out;
        for_each_name(named, [&](std::string_view name) {
            if (served_names.contains(name)) out.append(out.empty() ? "" : ", ").append(name);
        });
        return out;
    };
    std::vector<Finding> out;
    if (const auto fields = carried(cc.private_names); !fields.empty())
        out.push_back({cache_rule("private-fields"),
                       fmt::format("the origin's reply said private=\"{}\": a shared cache must not store those "
                                   "fields; the reused reply carries {}",
                                   cc.private_names, fields)});
    if (const auto fields = carried(cc.no_cache_names); !fields.empty())
        out.push_back({cache_rule("no-cache-fields"),
                       fmt::format("the origin's reply said no-cache=\"{}\": those fields are not sent without "
                                   "validating the copy; the reply reused unvalidated carries {}",
                                   cc.no_cache_names, fields)});
    return out;
}

std::optional<Finding> header_update_finding(const CacheHeaders& stored, const CacheHeaders& updated,
                                             const CacheHeaders& served, const ParentStamp* parent) {
    // The fields the judge reads that a 304 may update (Age, Date and the stamps aside).
    static constexpr std::array<std::pair<std::string_view, CacheField>, 5> kUpdated = {{
        {"cache-control", CacheField::cache_control},
        {"expires", CacheField::expires},
        {"last-modified", CacheField::last_modified},
        {"etag", CacheField::etag},
        {"vary", CacheField::vary},
    }};
    for (const auto& [name, field] : kUpdated) {
        // A field the parent's 304 did not carry is not updated (3.2): the cache keeps its stored value.
        if (parent && !parent->sent(name)) continue;
        const auto before = stored.get(field);
        const auto after = updated.get(field);
        // By meaning: a 304 that sends the same directives in another order changes nothing, and a
        // copy served with the new ones reordered was updated.
        if (equivalent_fields(name, before, after) || !equivalent_fields(name, served.get(field), before)) continue;
        return Finding{cache_rule("header-update"),
                       fmt::format("{} {}, which the origin's 304 changed to '{}'; the copy updated from it still "
                                   "served the stored '{}'",
                                   parent ? "its parent's 304 during this request carried"
                                          : "it revalidated during this request (Cache-Status fwd-status=304): its "
                                            "parent's 304 carried",
                                   name, after.value_or("(none)"), before.value_or("(none)"))};
    }
    return std::nullopt;
}

namespace {

/// Whether an If-None-Match list names `etag` (weak comparison, RFC 9110 13.1.2).
bool listed_in(std::string_view if_none_match, std::string_view etag) {
    for (const auto member : FieldList(if_none_match))
        if (weak_match(member, trim(etag))) return true;
    return false;
}

}  // namespace

std::optional<Finding> not_modified_finding(const RequestFacts& request, const CacheHeaders& reply,
                                            const CacheHeaders* fetch) {
    const auto etag = reply.etag() ? reply.etag() : fetch ? fetch->etag() : std::nullopt;
    if (request.if_none_match) {
        if (trim(*request.if_none_match) == "*") return std::nullopt;
        // Without an ETag in the 304 (Squid 5.7 leaves it out) nor a known stored fetch, whether the reply
        // had one is unknown: only a fetch known to have none shows the 304 wrong.
        if (!etag && !fetch) return std::nullopt;
        if (etag && listed_in(*request.if_none_match, *etag)) return std::nullopt;
        const auto what = etag ? fmt::format("a 304 for ETag {} to If-None-Match: {}", *etag, *request.if_none_match)
                               : std::string("a 304 to If-None-Match for a reply without ETag");
        // If-Modified-Since alone would have allowed it: the cache evaluated the date, which
        // a recipient must ignore when the request has If-None-Match (RFC 9110 13.2.2).
        if (request.if_modified_since && !modified_since(request, reply, fetch))
            return Finding{cache_rule("validator-precedence"),
                           what + ", judged by If-Modified-Since, which If-None-Match overrides"};
        return Finding{cache_rule("not-modified"), what};
    }
    if (request.if_modified_since && modified_since(request, reply, fetch))
        return Finding{cache_rule("not-modified"),
                       fmt::format("a 304 to If-Modified-Since: {} for a reply Last-Modified {}",
                                   *request.if_modified_since, *last_modified_of(reply, fetch))};
    return std::nullopt;
}

std::optional<Finding> not_modified_fields_finding(const CacheHeaders& reply, const CacheHeaders& stored) {
    const bool etag = stored.etag() && !reply.etag();
    const bool vary = stored.vary() && !reply.vary();
    if (!etag && !vary) return std::nullopt;
    return Finding{cache_rule("not-modified-fields"), fmt::format("a 304 without the {} the stored reply has ({})",
                                                                  etag && vary ? "ETag and Vary"
                                                                  : etag       ? "ETag"
                                                                               : "Vary",
                                                                  etag ? *stored.etag() : *stored.vary())};
}

std::optional<Finding> full_reply_precedence_finding(const RequestFacts& request, const CacheHeaders& reply) {
    if (!request.if_none_match || !request.if_modified_since || !reply.etag()) return std::nullopt;
    const bool matched = trim(*request.if_none_match) == "*" || listed_in(*request.if_none_match, *reply.etag());
    if (!matched || !modified_since(request, reply, nullptr)) return std::nullopt;
    return Finding{cache_rule("validator-precedence"),
                   fmt::format("a 200 for ETag {}, which If-None-Match: {} matches (a 304 was due), judged by "
                               "If-Modified-Since: {}, which If-None-Match overrides",
                               *reply.etag(), *request.if_none_match, *request.if_modified_since)};
}

}  // namespace spe
