#include "judge/cache_judge.hpp"

#include "judge/cache_claims.hpp"
#include "judge/cache_rule_catalogue.hpp"
#include "judge/fetch_memory.hpp"
#include "judge/framing_rules.hpp"
#include "judge/interim_rule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>

namespace spe {

bool is_unsafe_method(std::string_view method) {
    return method != "GET" && method != "HEAD" && method != "OPTIONS" && method != "TRACE";
}

namespace {

// The Collector's clock stamps in milliseconds; a fetch made for a request
// is never older than the request by more than that rounding.
constexpr double kClockSlack = 0.005;
// A stamp from the future by more than this is not the Collector's.
constexpr double kFutureSlack = 5.0;

void add_field(CacheVerdict::Fields& out, std::string name, std::optional<std::string_view> value) {
    if (value) out.emplace_back(std::move(name), *value);
}

CacheVerdict::Fields judged_fields(const CacheHeaders& h) {
    CacheVerdict::Fields out;
    for (const auto& [name, field] : kShownFields)
        add_field(out, std::string(name), h.get(field));
    return out;
}

/// The request's side of a violation's evidence. A field the stored reply's Vary
/// names is shown beside the stored variant's; credentials and cookies as their
/// keyed digests (request_field), so that equal values still show as equal.
CacheVerdict::Fields request_fields(const RequestFacts& r, const StoredFor* stored_for) {
    CacheVerdict::Fields out;
    out.emplace_back("method", r.method);
    add_field(out, "cache-control", request_field(r, "cache-control"));
    add_field(out, "pragma", request_field(r, "pragma"));
    add_field(out, "if-none-match", r.if_none_match);
    add_field(out, "if-modified-since", r.if_modified_since);
    bool authorization_shown = false;
    if (stored_for)
        for (const auto& [name, stored] : stored_for->vary) {
            if (name == "*") continue;
            authorization_shown = authorization_shown || name == "authorization";
            add_field(out, name, request_field(r, name));
            add_field(out, "stored variant's " + name, stored);
        }
    if (r.authorization && !authorization_shown) out.emplace_back("authorization", "(present)");
    return out;
}

/// The fetch as a cache holds it after merging a 304 into it: the freshness fields it serves (the 304's,
/// RFC 9111 3.2) in place of the first header's; Date and the rest as fetched. Nothing when the copy serves
/// the fetch's own: the fetch and its parsed facts then judge it as they are, without a copy to parse.
std::optional<KnownFetch> updated_by_304(const KnownFetch& fetch, const CacheHeaders& served) {
    constexpr std::array kFreshness = {CacheField::cache_control, CacheField::expires};
    const auto changed = [&](CacheField field) {
        const auto value = served.get(field);
        return value && value != fetch.headers.get(field);
    };
    if (std::none_of(kFreshness.begin(), kFreshness.end(), changed)) return std::nullopt;
    KnownFetch copy;
    copy.stamp = fetch.stamp;
    copy.status = fetch.status;
    copy.headers = fetch.headers;
    copy.first_seen = fetch.first_seen;
    copy.seen_fresh = fetch.seen_fresh;
    for (auto field : kFreshness)
        if (const auto value = served.get(field)) copy.headers.set(field, *value);
    return copy;
}

void add_exercised(CacheVerdict& v, std::string_view rule) {
    if (std::find(v.exercised.begin(), v.exercised.end(), rule) == v.exercised.end() &&
        v.exercised.size() < v.exercised.capacity())
        v.exercised.push_back(rule);
    // A stricter form of staleness (must-revalidate, ...) is a chance to break the plain rule too.
    if (rule == rule_id("must-revalidate") || rule == rule_id("proxy-revalidate") || rule == rule_id("s-maxage"))
        add_exercised(v, rule_id("stale"));
}

/// What kind of request or copy a cache declined to reuse a fresh copy for.
std::string miss_cause(const RequestFacts& r, const KnownFetch& cand) {
    if (r.if_none_match || r.if_modified_since) return "conditional request";
    if (cand.headers.set_cookie) return "set-cookie";
    if (cand.headers.vary()) return "vary";
    if (r.authorization) return "authorization";
    if (cand.status != 200) return fmt::format("status {}", cand.status);
    if (r.url.find('?') != std::string::npos) return "query string";
    return "fresh copy";
}

/// One rule's judgement added to the verdict: its chance, and its finding if it broke it.
void add_judgement(CacheVerdict& v, std::string_view rule, RuleJudgement j) {
    if (j.exercised) add_exercised(v, rule);
    if (j.finding) v.violations.push_back(std::move(*j.finding));
}

/// A 200 to a conditional GET or HEAD whose If-None-Match matches: a 304 was due, whatever
/// If-Modified-Since says (RFC 9110 13.2.2).
void judge_full_reply_precedence(CacheVerdict& v, const RequestRecord& record, const RequestFacts& request,
                                 const Measure& reply) {
    if (reply.status != 200 || !request.if_none_match || !request.if_modified_since ||
        (record.method != "GET" && record.method != "HEAD"))
        return;
    add_exercised(v, rule_id("validator-precedence"));
    if (auto f = full_reply_precedence_finding(request, reply.cache_headers)) v.violations.push_back(std::move(*f));
}

/// A reuse's violations shown: the fetch's judged fields and what the cache served of them (its Age; for a
/// proxy, its Date and what its parent sent), the reference's fields, the request's.
void add_evidence(CacheVerdict& v, const KnownFetch& fetch, const Measure& reply, const Measure* reference,
                  const RequestFacts& request, const StoredFor* stored, const ParentStamp* parent) {
    const auto& h = reply.cache_headers;
    v.evidence_served = judged_fields(fetch.headers);
    v.evidence_served.emplace_back("age (as served)", h.age().value_or("(none)"));
    if (parent) {
        v.evidence_served.emplace_back("date (as served)", h.date().value_or("(none)"));
        v.evidence_served.emplace_back("x-spe-parent (as served)", *h.parent());
    }
    if (reference) v.evidence_reference = judged_fields(reference->cache_headers);
    v.evidence_request = request_fields(request, stored);
}

/// A cache's claim against what it served: a claimed hit that was a fetch made for this request, a claimed
/// miss that was a stored copy.
void judge_claim(CacheVerdict& v, const RequestRecord& record, const FetchStamp& stamp) {
    if (v.claim == CacheClaim::hit && !v.reused && stamp.time >= record.ts - kClockSlack)
        v.claim_conflict = "claimed a hit, but served a fetch made for this request";
    else if (v.claim == CacheClaim::miss && v.reused)
        v.claim_conflict = fmt::format("claimed a miss, but served a stored copy fetched {:.1f} s before the request",
                                       record.ts - stamp.time);
}

/// The fields its parent sent for one hop only (patch 0023): neither forwarded nor stored, so a miss and a
/// reuse are judged alike.
void judge_connection_fields(CacheVerdict& v, const ParentStamp& parent, const CacheHeaders& served) {
    if (parent.connection.empty()) return;
    add_exercised(v, rule_id("connection-fields"));
    if (auto f = connection_fields_finding(parent, served.field_names)) v.violations.push_back(std::move(*f));
}

/// The fields the origin sent for one hop only (those its Connection listed) never reach the Multiplier's own
/// port: Squid removes them. A proxy's parent stamp of the same fetch names them (patch 0023): kept beside the
/// origin's fields, so a repro case's stand-in origin sends them, and a Connection listing them.
void add_hop_fields(const RequestRecord& record, CacheVerdict& reference) {
    if (!reference.origin || !record.collector.fetch) return;
    for (const auto& p : record.proxies) {
        const auto text = p.measure.cache_headers.parent();
        if (p.measure.fetch != record.collector.fetch || !text || text->find("connection=") == std::string_view::npos)
            continue;
        const auto stamp = parse_parent_stamp(*text);
        if (!stamp || stamp->connection.empty()) continue;
        reference.origin_connection = stamp->connection;
        return;
    }
}

}  // namespace

CacheJudge::CacheJudge(std::vector<std::string> caches, std::size_t capacity)
    : names_(std::move(caches)),
      fetches_(capacity),
      caches_(names_.size(), CacheMemory(capacity)),
      collector_(capacity) {}

const KnownFetch* CacheJudge::find_fetch(std::uint64_t serial) const {
    return fetches_.find(serial);
}

const KnownFetch* CacheJudge::remember(const FetchStamp& stamp, const Measure& reply, const ParentStamp* parent,
                                       bool seen_fresh, double at) {
    if (const auto* known = fetches_.find(stamp.serial))
        return known->stamp.collector() == stamp.collector() ? known : nullptr;
    KnownFetch f;
    f.stamp = stamp;
    f.status = reply.status.value_or(0);
    f.headers = reply.cache_headers;
    // What judging reads later; the rest of the reply's fields only cost memory here.
    for (auto unread : {CacheField::cache_status, CacheField::x_cache, CacheField::validated, CacheField::reply_to,
                        CacheField::parent})
        f.headers.clear(unread);
    f.headers.field_names = {};
    if (parent) {
        // First seen in a proxy's reply: its Date and Age may be the proxy's own (nginx writes its
        // Date); the Collector's, as it sent them, are the origin's on a fetch it just made.
        for (auto [field, value] :
             {std::pair{CacheField::date, &parent->date}, std::pair{CacheField::age, &parent->age}}) {
            if (*value)
                f.headers.set(field, **value);
            else
                f.headers.clear(field);
        }
    }
    f.first_seen = at;
    f.seen_fresh = seen_fresh;
    return &fetches_.insert_or_assign(stamp.serial, std::move(f));
}

const StoredFor* CacheJudge::stored_for(const KnownFetch& fetch, const CacheMemory& memory) {
    return memory.deliveries.find(fetch.stamp.serial);
}

void CacheJudge::remember_delivery(CacheMemory& memory, const KnownFetch& fetch, const RequestFacts& request,
                                   double sent_at) {
    StoredFor d{request.authorization, request.cc.no_store, {}, sent_at};
    if (fetch.headers.vary()) d.vary = vary_values(request, fetch.facts().vary);
    memory.deliveries.insert_or_assign(fetch.stamp.serial, std::move(d));
}

void CacheJudge::note_collector_unsafe(const RequestRecord& record) {
    const auto& reply = record.collector;
    if (!reply.status) return;
    // Squid purges in the same step in which it stamps the origin's reply: the stamp is the moment, on the
    // clock of every stamp it compares with. The Multiplier sees the reply later (by milliseconds under load),
    // and the Collector may meanwhile have stored a new copy for a proxy's request. A reply without a stamp:
    // when its first byte reached the Multiplier, the latest the invalidation can have been.
    const auto stamp = reply.fetch ? parse_fetch_stamp(*reply.fetch) : std::nullopt;
    const double at = stamp ? stamp->time : record.ts + static_cast<double>(reply.ttfb_us.value_or(0)) / 1e6;
    note_unsafe(-1, record.url, *reply.status, at);
}

void CacheJudge::note_unsafe(int cache, const std::string& url, unsigned status, double at) {
    if (status < 200 || status >= 400) return;
    std::lock_guard lock(mutex_);
    auto& m = memory_of(cache);
    m.invalidated.insert_or_assign(url_key(url), at);
}

void CacheJudge::judge(RequestRecord& record, std::string_view header_block, const FetchMemory* fetches) {
    auto request = request_facts(record.method, record.url, header_block);
    Measure& ref = record.collector;
    // The Collector's own X-Cache entries: not a proxy's claim.
    Case c{record,
           request,
           url_key(record.url),
           claim_names(ref.cache_headers),
           ref.fetch ? parse_fetch_stamp(*ref.fetch) : std::nullopt,
           fetches};
    std::lock_guard lock(mutex_);
    if (ref.status) {
        const double served_at = record.ts + static_cast<double>(ref.ttfb_us.value_or(0)) / 1e6;
        ref.cache = judge_reply(c, Leg{ref, nullptr, collector_, served_at, record.ts});
    }
    for (std::size_t i = 0; i < record.proxies.size() && i < caches_.size(); ++i) {
        auto& p = record.proxies[i];
        if (p.measure.status) {
            const double served_at = p.sent_at + static_cast<double>(p.measure.ttfb_us.value_or(0)) / 1e6;
            p.measure.cache =
                judge_reply(c, Leg{p.measure, &ref, caches_[i], served_at, p.sent_at, p.overtook_related});
        } else if (judged_without_final_reply(ref, p.measure)) {
            p.measure.cache.emplace();  // no final reply: judged on the interim replies alone
        }
        if (p.measure.cache) add_interim_finding(*p.measure.cache, ref, p.measure, p.sent_at);
    }
    if (ref.cache) add_hop_fields(record, *ref.cache);
    record.request_headers = std::move(request.fields);
}

std::optional<FetchStamp> CacheJudge::Case::stamp(std::string_view text) {
    if (const auto& ref = record.collector.fetch; ref && *ref == text) return reference_stamp;
    if (text != last_text || last_text.empty()) {
        last_text = text;
        last_stamp = parse_fetch_stamp(text);
    }
    return last_stamp;
}

CacheVerdict CacheJudge::judge_reply(Case& c, const Leg& leg) {
    CacheVerdict v;
    judge_reply_itself(v, c, leg);
    if (const auto stamp = trusted_stamp(v, c, leg)) judge_stamped(v, c, leg, *stamp);
    if (leg.overtook && v.unjudged.empty())
        v.unjudged =
            "overtook: sent before this proxy had answered an earlier request for this URL or an unsafe one, so "
            "the rules that read what the cache kept before (a missed hit, a 304's stored fields) are not judged";
    return v;
}

void CacheJudge::judge_reply_itself(CacheVerdict& v, const Case& c, const Leg& leg) const {
    static const std::vector<std::string> kNoNames;
    const auto& h = leg.reply.cache_headers;
    // The Collector's own claim counts; in a proxy's reply, the Collector's entries are not the proxy's.
    v.claim = cache_claim(h, leg.reference ? c.upstream_claims : kNoNames);
    if (const auto validated = h.validated()) {
        if (auto vs = parse_fetch_stamp(*validated)) v.validated_at = vs->time;
        v.validated_length = validation_length(*validated);
    }
    // A cache that keeps its stored header after its parent's 304 (nginx) shows no newer stamp: its claim
    // says it asked during this request, by the time it answered at the latest.
    if (v.claim == CacheClaim::revalidated) v.validated_at = std::max(v.validated_at.value_or(0), leg.served_at);
    add_judgement(v, rule_id("head-body"), judge_head_body(c.record.method, leg.reply));
    judge_not_modified(v, c, leg);
    judge_full_reply_precedence(v, c.record, c.request, leg.reply);
}

void CacheJudge::judge_not_modified(CacheVerdict& v, const Case& c, const Leg& leg) const {
    const auto& record = c.record;
    const auto& request = c.request;
    const auto& h = leg.reply.cache_headers;
    if (leg.reply.status != 304 || (!request.if_none_match && !request.if_modified_since)) return;
    add_exercised(v, rule_id("not-modified"));
    const auto* copy = leg.memory.last_copy.find(c.url);
    const KnownFetch* stored = copy ? find_fetch(copy->fetch) : nullptr;
    const CacheHeaders* held = stored ? &stored->headers : nullptr;
    if (auto f = not_modified_finding(request, h, held)) v.violations.push_back(std::move(*f));
    // A proxy's 304 that names this request is its parent's, relayed: the
    // parent's fields (judged on the Collector's own row), not the proxy's.
    const bool relayed = leg.reference && h.reply_to() && !record.tag.empty() && *h.reply_to() == record.tag;
    if (held && !relayed && !leg.overtook) {  // `held` is what the cache kept in the client's order
        add_exercised(v, rule_id("not-modified-fields"));
        if (auto f = not_modified_fields_finding(h, *held)) v.violations.push_back(std::move(*f));
    }
}

std::optional<FetchStamp> CacheJudge::trusted_stamp(CacheVerdict& v, Case& c, const Leg& leg) {
    const auto& reply = leg.reply;
    if (!reply.fetch) {
        // A 304 has no body from any fetch; anything else unstamped is not from the origin.
        if (reply.status == 304) v.provenance = Provenance::not_modified;
        v.unjudged = reply.status == 304 ? "a 304 without a stamp: only the 304 rules apply"
                                         : "no X-SPE-Fetch stamp: not from the origin";
        return std::nullopt;
    }
    const auto stamp = c.stamp(*reply.fetch);
    const bool ours = stamp && is_ours(stamp->collector(), !leg.reference);
    if (!stamp || !ours || stamp->time > leg.served_at + kFutureSlack) {
        v.provenance = Provenance::corrupt;
        v.unjudged = !stamp ? "corrupt stamp: X-SPE-Fetch does not parse"
                     : !ours
                         ? fmt::format("corrupt stamp: names Collector {}, not this run's", stamp->collector())
                         : fmt::format("corrupt stamp: fetched {:.1f} s after the reply", stamp->time - leg.served_at);
        return std::nullopt;
    }
    return stamp;
}

bool CacheJudge::is_ours(std::string_view collector, bool on_reference) {
    if (std::find(collector_ids_.begin(), collector_ids_.end(), collector) != collector_ids_.end()) return true;
    if (on_reference) collector_ids_.emplace_back(collector);  // the reference names the Collector
    return on_reference;
}

void CacheJudge::judge_stamped(CacheVerdict& v, Case& c, const Leg& leg, const FetchStamp& stamp) {
    const auto& record = c.record;
    const auto& h = leg.reply.cache_headers;
    // What the proxy's parent sent it with this copy. Not for the Collector's own reply: its parent is the
    // origin, whose fields the fetch keeps.
    std::optional<ParentStamp> parent;
    if (const auto p = h.parent(); p && leg.reference) parent = parse_parent_stamp(*p);
    const ParentStamp* sent = parent ? &*parent : nullptr;
    const KnownFetch* fetch = trace(v, record, leg, stamp, sent);
    if (sent) judge_connection_fields(v, *sent, h);
    v.reused = is_reuse(c, leg.reply, leg.reference, stamp);
    // A body from the proxy's store: a copy it reused, or one it revalidated during this request (its fetch is
    // older than the request), as a cache that merged its parent's 304 serves.
    const bool from_store = v.reused || stamp.time < record.ts - kClockSlack;
    add_judgement(v, rule_id("framing"), judge_framing(record.method, from_store, leg.reply));
    std::optional<double> invalidated;
    if (const auto* at = leg.memory.invalidated.find(c.url); at && *at <= leg.sent_at) invalidated = *at;
    if (fetch && !v.reused) remember_delivery(leg.memory, *fetch, c.request, leg.sent_at);
    // The Collector's reply as the origin left it: a fresh fetch, or a copy the origin's 304 updated during this
    // request (what a repro case's stand-in origin answers with from then on).
    const bool validated_now = v.validated_at && *v.validated_at >= record.ts - kClockSlack;
    if (!leg.reference && (!v.reused || validated_now)) v.origin = h;
    if (fetch && v.reused) {
        recall_claimed_validation(v, leg.memory, c.url, stamp.serial);
        judge_reused_copy(v, c, leg, *fetch, sent, invalidated);
    }
    if (!leg.overtook) judge_candidate(v, c, leg.memory, leg.served_at, invalidated, stamp);
    judge_claim(v, record, stamp);
    if (record.method == "GET")
        remember_copy(leg.memory, c.url, stamp.serial, v.reused,
                      v.claim == CacheClaim::revalidated ? v.validated_at.value_or(0) : 0);
}

const KnownFetch* CacheJudge::trace(CacheVerdict& v, const RequestRecord& record, const Leg& leg,
                                    const FetchStamp& stamp, const ParentStamp* parent) {
    v.fetch = stamp.id;
    v.fetched_at = stamp.time;
    const KnownFetch* fetch = remember(stamp, leg.reply, parent, stamp.time >= record.ts - kClockSlack, leg.served_at);
    v.provenance = fetch && fetch->seen_fresh ? Provenance::origin : Provenance::unknown;
    return fetch;
}

void CacheJudge::judge_reused_copy(CacheVerdict& v, const Case& c, const Leg& leg, const KnownFetch& fetch,
                                   const ParentStamp* parent, std::optional<double> invalidated) {
    const auto& h = leg.reply.cache_headers;
    const StoredFor* stored = stored_for(fetch, leg.memory);
    // A copy the cache updated from a 304 (RFC 9111 4.3.4: its X-SPE-Validated is newer than the fetch)
    // is fresh by the fields that 304 brought, as it serves them, not by the fetch's first header.
    std::optional<KnownFetch> updated;
    if (v.validated_at && *v.validated_at > fetch.stamp.time) updated = updated_by_304(fetch, h);
    const ReuseQuestion q{
        updated ? *updated : fetch, c.request, stored, leg.served_at, c.record.ts, v.validated_at, invalidated,
        h.content_encoding(),       parent};
    judge_reuse(v, q, leg.reply);
    if (leg.reference && parent) judge_header_update(v, c, fetch, leg.reply, *leg.reference, *parent);
    if (!v.violations.empty()) add_evidence(v, fetch, leg.reply, leg.reference, c.request, stored, parent);
}

bool CacheJudge::is_reuse(const Case& c, const Measure& reply, const Measure* reference, const FetchStamp& stamp) {
    const auto& record = c.record;
    // The Collector: a fetch older than the request came from its store.
    if (!reference) return stamp.time < record.ts - kClockSlack;
    // A proxy: the Collector names the client request each of its replies
    // answers; a copy that names another one was kept by the proxy. Without
    // that note, only a fetch older than the reference's tells.
    if (const auto to = reply.cache_headers.reply_to(); to && !record.tag.empty()) return *to != record.tag;
    if (const auto& ref = c.reference_stamp; ref && ref->collector() == stamp.collector())
        return stamp.serial < ref->serial;
    return stamp.time < record.ts - kClockSlack;
}

void CacheJudge::add_interim_finding(CacheVerdict& v, const Measure& reference, const Measure& reply, double sent_at) {
    // Only a reply the proxy forwarded can owe interim replies: a reused one never went to its parent.
    ParentInterim parent;
    std::optional<ParentStamp> stamp;
    if (const auto p = reply.cache_headers.parent(); p && !v.reused) stamp = parse_parent_stamp(*p);
    // A stamp without interim= says nothing of them (no interim reply, or a Collector before patch 0021):
    // then only an origin fetch made for this request tells, by the reference's.
    if (stamp && !stamp->interim.empty()) parent.sent = &stamp->interim;
    parent.own_fetch = !v.reused && is_own_fetch(reference, reply, sent_at);
    auto j = judge_interim(reference, reply, parent);
    if (j.exercised) add_exercised(v, rule_id("interim"));
    if (!j.finding) return;
    v.violations.push_back(std::move(*j.finding));
    // What each side received before its final reply (a reuse's evidence, if any, stays as it is).
    v.evidence_served.emplace_back("interim (as received)", interim_text(reply));
    v.evidence_reference.emplace_back("interim (as received)", interim_text(reference));
}

void CacheJudge::judge_reuse(CacheVerdict& v, const ReuseQuestion& q, const Measure& reply) {
    for (auto& f : reuse_barriers(q, &v.advisories)) {
        add_exercised(v, f.rule);
        v.violations.push_back(std::move(f));
    }
    for (const auto& a : v.advisories)
        add_exercised(v, a.rule);
    add_exercised(v, rule_id("age"));
    if (auto age = age_finding(q, reply.status.value_or(0), reply.cache_headers.age()))
        v.violations.push_back(std::move(*age));
    v.age_s = freshness(q).age;
    // What the stored reply must carry as it was received: known only from the parent's own note
    // (a 304 made from the copy carries few of its fields).
    if (q.parent && reply.status != 304) {
        if (date_to_keep(*q.parent)) {
            add_exercised(v, rule_id("date"));
            if (auto f = date_finding(*q.parent, reply.cache_headers.date())) v.violations.push_back(std::move(*f));
        }
        add_exercised(v, rule_id("stored-fields"));
        if (auto f = stored_fields_finding(*q.parent, reply.cache_headers.field_names, q.fetch.facts().cc))
            v.violations.push_back(std::move(*f));
    }
    judge_qualified_fields(v, q, reply);
}

void CacheJudge::judge_qualified_fields(CacheVerdict& v, const ReuseQuestion& q, const Measure& reply) {
    // Only a copy served unvalidated can break them, and a 304 carries few of the copy's fields.
    const auto& cc = q.fetch.facts().cc;
    if (reply.status == 304 || (!cc.private_fields && !cc.no_cache_fields) || freshness(q).validated_now) return;
    if (cc.private_fields) add_exercised(v, rule_id("private-fields"));
    if (cc.no_cache_fields) add_exercised(v, rule_id("no-cache-fields"));
    for (auto& f : qualified_fields_findings(cc, reply.cache_headers.field_names))
        v.violations.push_back(std::move(f));
}

void CacheJudge::judge_header_update(CacheVerdict& v, const Case& c, const KnownFetch& fetch, const Measure& reply,
                                     const Measure& reference, const ParentStamp& parent) {
    // Only when the origin confirmed this very fetch during this request, with a 304 the Collector
    // merged (its reply shows it), and the proxy served its copy of that fetch.
    const auto& ref = reference.cache;
    if (!ref || !ref->validated_at || *ref->validated_at < c.record.ts - kClockSlack || !c.reference_stamp ||
        c.reference_stamp->serial != fetch.stamp.serial || reply.status == 304)
        return;
    // Judged by what the proxy's parent sent it, which the served copy shows only by a stamp of this request:
    // the proxy merged its parent's 304 into the copy. An older stamp is the one the copy was stored with: the
    // proxy did not ask, dropped the reply or asked only after serving (a background revalidation), and from
    // outside nothing tells which or what its parent answered. Its staleness finding, if any, stands.
    // A cache that claims it revalidated (Cache-Status fwd-status=304) did ask during this request: its parent's
    // port, standing in for the origin, answered with the origin's 304, so every field that changed came in it.
    const bool stamped_now = parent.time >= c.record.ts - kClockSlack;
    if (!stamped_now && v.claim != CacheClaim::revalidated) return;
    add_exercised(v, rule_id("header-update"));
    auto f = header_update_finding(fetch.headers, reference.cache_headers, reply.cache_headers,
                                   stamped_now ? &parent : nullptr);
    // The other end-to-end fields, by the values the fetch first came with (the validator keeps them).
    if (!f && c.fetches)
        if (const auto first = c.fetches->first_headers(fetch.stamp))
            f = field_update_finding(*first, reference.headers, reply.headers, stamped_now ? &parent : nullptr);
    if (!f) return;
    // The old fields are also why the copy looked stale, if it did: one finding, the cause's.
    const auto needed_validation = std::find_if(v.violations.begin(), v.violations.end(), [](const Finding& x) {
        return x.rule == rule_id("stale") || x.rule == rule_id("must-revalidate") ||
               x.rule == rule_id("proxy-revalidate") || x.rule == rule_id("s-maxage") || x.rule == rule_id("no-cache");
    });
    if (needed_validation != v.violations.end())
        *needed_validation = std::move(*f);
    else
        v.violations.push_back(std::move(*f));
}

void CacheJudge::judge_candidate(CacheVerdict& v, const Case& c, CacheMemory& memory, double served_at,
                                 std::optional<double> invalidated, const FetchStamp& served) {
    const auto& record = c.record;
    const auto& request = c.request;
    if (record.method != "GET" && record.method != "HEAD") return;
    const auto* copy = memory.last_copy.find(c.url);
    if (!copy || (v.reused && copy->fetch == served.serial)) return;
    const KnownFetch* cand = find_fetch(copy->fetch);
    if (!cand || cand->stamp.serial > served.serial) return;
    // The copy this cache last passed on for the URL: had it kept it, would
    // serving it now have broken a rule? Those rules were exercised (passed);
    // if none, and its lifetime was explicit and not over, this was a missed hit.
    const ReuseQuestion q{*cand,       request,     stored_for(*cand, memory), served_at, record.ts, std::nullopt,
                          invalidated, std::nullopt};
    std::vector<Finding> advisories;
    const auto barriers = reuse_barriers(q, &advisories);
    for (const auto& f : barriers)
        add_exercised(v, f.rule);
    bool request_asked = false;  // the request's own directives asked for a forward
    for (const auto& a : advisories) {
        if (a.rule != rule_id("heuristic")) add_exercised(v, a.rule);
        request_asked = request_asked || a.rule.starts_with("request-");
    }
    const auto fr = freshness(q);
    if (!v.reused && barriers.empty() && !request_asked && fr.source != "heuristic" && fr.source != "none" &&
        fr.age < fr.lifetime)
        v.conservative = fmt::format("{}: {}", copy->reused ? "held" : "passed on", miss_cause(request, *cand));
}

void CacheJudge::remember_copy(CacheMemory& memory, UrlKey key, std::uint64_t fetch, bool reused,
                               double claimed_validation) {
    if (auto* copy = memory.last_copy.find(key); copy && copy->fetch == fetch) {
        copy->reused = copy->reused || reused;
        copy->claimed_validation = std::max(copy->claimed_validation, claimed_validation);
        return;
    }
    memory.last_copy.insert_or_assign(key, LastCopy{fetch, reused, claimed_validation});
}

void CacheJudge::recall_claimed_validation(CacheVerdict& v, const CacheMemory& memory, UrlKey url,
                                           std::uint64_t fetch) {
    const auto* copy = memory.last_copy.find(url);
    if (!copy || copy->fetch != fetch || copy->claimed_validation <= v.validated_at.value_or(0)) return;
    v.validated_at = copy->claimed_validation;
}

}  // namespace spe
