// The cache-rule judge holds a proxy to what its parent (the Collector) sent it (X-SPE-Parent),
// and the Collector to what the origin sent: Age, Date, the stored fields, a 304's updates.
#include "judge/cache_judge.hpp"
#include "judge/fetch_memory.hpp"
#include "judge_records.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace {

using spe::test::fetch_stamp;
using spe::test::http_date;
using spe::test::kRequest;
using spe::test::kT0;
using spe::test::one_proxy_record;
const std::string kNames = "date cache-control content-type x-spe-fetch x-spe-reply-to";

/// A reply of fetch `serial`, made at `fetched`, naming the request `reply_to`; origin Date `date`.
spe::Measure reply(int serial, double fetched, const std::string& cc, const std::string& reply_to,
                   const std::string& age, double date) {
    spe::Measure m;
    m.status = 200;
    m.ttfb_us = 1000;
    m.fetch = fetch_stamp(serial, fetched);
    m.cache_headers.set(spe::CacheField::cache_control, cc);
    m.cache_headers.set(spe::CacheField::reply_to, reply_to);
    m.cache_headers.set(spe::CacheField::age, age);
    m.cache_headers.set(spe::CacheField::date, http_date(date));
    m.cache_headers.field_names = spe::FieldNameSet::of(kNames + " age");
    return m;
}

/// `m` with the parent's note: sent at `t` with this Age and Date and these field names.
spe::Measure& from_parent(spe::Measure& m, double t, const std::string& age, double date,
                          const std::string& names = kNames) {
    m.cache_headers.set(spe::CacheField::parent,
                        fmt::format(R"(t={:.3f}; age="{}"; date="{}"; fields="{}")", t, age, http_date(date), names));
    return m;
}

/// `m` with the parent's note, its Date as sent (`date`: any text; nullopt: the parent sent none).
spe::Measure& from_parent_as_sent(spe::Measure& m, double t, std::optional<std::string> date) {
    m.cache_headers.set(spe::CacheField::parent,
                        date ? fmt::format(R"(t={:.3f}; age="0"; date="{}"; fields="{}")", t, *date, kNames)
                             : fmt::format(R"(t={:.3f}; age="0"; fields="{}")", t, kNames));
    return m;
}

std::vector<std::string> rules(const spe::Measure& m) {
    std::vector<std::string> out;
    for (const auto& f : m.cache->violations)
        out.emplace_back(f.rule);
    std::sort(out.begin(), out.end());
    return out;
}

using Rules = std::vector<std::string>;

/// Request 1 (tag-1): the Collector fetched `cc` from the origin at kT0 and sent it to the proxy, which stored it.
void judge_first_fetch(spe::CacheJudge& judge, const std::string& cc) {
    auto proxy = reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0),
                                  from_parent(proxy, kT0 + 0.02, "0", kT0));
    judge.judge(first, kRequest);
}

/// Request 1 stores fetch 1 (Cache-Control `cc`) at the proxy from a parent that sent the fields `sent`; request 2,
/// a second later, reuses it with the fields `served` adds to the record's own. Returns request 2, judged.
spe::RequestRecord reuse_after_parent_sent(spe::CacheJudge& judge, const std::string& sent,
                                           const std::string& served = "", const std::string& cc = "max-age=600") {
    auto proxy = reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0),
                                  from_parent(proxy, kT0 + 0.02, "0", kT0, sent));
    judge.judge(first, kRequest);
    auto reused = reply(1, kT0 + 0.001, cc, "tag-1", "1", kT0);
    if (!served.empty()) reused.cache_headers.field_names.add(served);
    auto second = one_proxy_record(2, kT0 + 1, reply(1, kT0 + 0.001, cc, "tag-2", "1", kT0),
                                   from_parent(reused, kT0 + 0.02, "0", kT0, sent));
    judge.judge(second, kRequest);
    return second;
}

}  // namespace

TEST_CASE("a proxy's copy is as old as its parent said, not as the origin said") {
    // The origin sent Age: 2147483648 with max-age=3600; the Collector answered the proxy from its
    // store with Age: 3. The proxy never held a stale copy: neither stale nor age is its fault.
    constexpr auto kHuge = "2147483648";
    spe::CacheJudge judge({"p"});
    auto proxy = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "3", kT0);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=3600", "tag-1", kHuge, kT0),
                                  from_parent(proxy, kT0 + 0.02, "3", kT0));
    judge.judge(first, kRequest);
    CHECK(rules(first.collector) == Rules{});

    auto reused = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "7", kT0);
    auto second = one_proxy_record(2, kT0 + 4, reply(1, kT0 + 0.001, "max-age=3600", "tag-2", "3", kT0),
                                   from_parent(reused, kT0 + 0.02, "3", kT0));
    judge.judge(second, kRequest);
    // The Collector is judged by the origin's: the copy it served from its store was never fresh,
    // and its Age (3) is far below the origin's.
    CHECK(rules(second.collector) == Rules{"age", "stale"});
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.reused);
    CHECK(rules(second.proxies[0].measure) == Rules{});
    CHECK(v.age_s.value() == Approx(7).margin(0.1));
    CHECK(std::count(v.exercised.begin(), v.exercised.end(), "age") == 1);

    SECTION("an Age below the one its parent sent, plus its time in store, is the proxy's own") {
        auto low = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "0", kT0);
        auto third = one_proxy_record(3, kT0 + 8, reply(1, kT0 + 0.001, "max-age=3600", "tag-3", kHuge, kT0),
                                      from_parent(low, kT0 + 0.02, "3", kT0));
        judge.judge(third, kRequest);
        CHECK(rules(third.proxies[0].measure) == Rules{"age"});
    }
}

TEST_CASE("the parent's Age is read as delta-seconds: invalid ignored, huge stale (RFC 9111 5.1, 1.2.2)") {
    // What the proxy's parent sent with the copy decides its age on arrival: an Age "10s" is no Age (the copy is
    // as old as its Date), one past any integer is 2^31, beyond any max-age below it.
    const auto judged = [](const std::string& cc, const std::string& age) {
        spe::CacheJudge judge({"p"});
        auto stored = reply(1, kT0 + 0.001, cc, "tag-1", age, kT0);
        auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, cc, "tag-1", age, kT0),
                                      from_parent(stored, kT0 + 0.02, age, kT0));
        judge.judge(first, kRequest);
        auto hit = reply(1, kT0 + 0.001, cc, "tag-1", "1", kT0);
        auto second = one_proxy_record(2, kT0 + 1, reply(1, kT0 + 0.001, cc, "tag-2", "1", kT0),
                                       from_parent(hit, kT0 + 0.02, age, kT0));
        judge.judge(second, kRequest);
        REQUIRE(second.proxies[0].measure.cache->reused);
        return rules(second.proxies[0].measure);
    };
    CHECK(judged("max-age=5", "10s") == Rules{});
    CHECK(judged("max-age=5", "abc") == Rules{});
    CHECK(judged("max-age=5", "10") == Rules{"age", "stale"});  // 11 s old, Age 1
    // Its Age (1) is below 2^31: understated, the proxy's own too.
    CHECK(judged("max-age=3600", "2147483648") == Rules{"age", "stale"});
    CHECK(judged("max-age=3600", "99999999999999999999") == Rules{"age", "stale"});
}

TEST_CASE("a proxy that reuses a copy whose max-age is invalid, as if fresh, is named (RFC 9111 4.2.1)") {
    // max-age='3600' is no delta-seconds: the reply has no valid max-age, and a shared cache that reuses it
    // without validation (Traffic Server, as if it said 3600) serves what caches are encouraged to read as stale.
    spe::CacheJudge judge({"p"});
    auto stored = reply(1, kT0 + 0.001, "max-age='3600'", "tag-1", "0", kT0);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age='3600'", "tag-1", "0", kT0),
                                  from_parent(stored, kT0 + 0.02, "0", kT0));
    judge.judge(first, kRequest);
    auto hit = reply(1, kT0 + 0.001, "max-age='3600'", "tag-1", "2", kT0);
    auto second = one_proxy_record(2, kT0 + 2, reply(3, kT0 + 2.001, "max-age='3600'", "tag-2", "0", kT0 + 2),
                                   from_parent(hit, kT0 + 0.02, "0", kT0));
    judge.judge(second, kRequest);
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.reused);
    REQUIRE(rules(second.proxies[0].measure) == Rules{"invalid-freshness"});
    CHECK(v.violations[0].section == "4.2.1");
    CHECK(v.violations[0].reason.find("max-age") != std::string::npos);
    CHECK(v.advisories.empty());
}

TEST_CASE("a proxy's own Date neither makes its copy younger nor passes for the origin's") {
    // The origin's reply left it 9 s before the fetch (Date kT0 - 9), max-age=10: 9 s old on arrival.
    // The proxy's reuse 3 s later carries a Date of its own, written when it served.
    spe::CacheJudge judge({"p"});
    auto forwarded = reply(2, kT0 + 0.005, "max-age=10", "tag-1", "0", kT0);  // the proxy's Date
    forwarded.cache_headers.clear(spe::CacheField::age);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=10", "tag-1", "0", kT0 - 9),
                                  from_parent(forwarded, kT0 + 0.006, "0", kT0 - 9));
    first.collector.cache_headers.clear(spe::CacheField::age);
    judge.judge(first, kRequest);
    CHECK_FALSE(first.proxies[0].measure.cache->reused);

    auto reused = reply(2, kT0 + 0.005, "max-age=10", "tag-1", "3", kT0 + 3);
    auto second = one_proxy_record(2, kT0 + 3, reply(3, kT0 + 3.001, "max-age=10", "tag-2", "0", kT0 + 3),
                                   from_parent(reused, kT0 + 0.006, "0", kT0 - 9));
    judge.judge(second, kRequest);
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.reused);
    // 9 s old on arrival plus 3 s in store: stale, and its Age (3) is 9 s low; its Date is not the stored one.
    CHECK(rules(second.proxies[0].measure) == Rules{"age", "date", "stale"});
    CHECK(v.age_s.value() == Approx(12).margin(0.1));
}

TEST_CASE("a copy the Collector held before a proxy asked is as old as in front of the origin") {
    // The origin's reply reached the Collector at kT0 with its Date kT0 and no Age; the proxy asked for it
    // 3 s later (its legs waited), got it from the Collector's copy with the origin's Date and no Age (its
    // proxy ports stand in for the origin), and reused it 1 s after that with Age 1. In front of the origin
    // it would have had a new reply: 1 s old, not 4, and its Age is right.
    spe::CacheJudge judge({"p"});
    auto fetched = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
    fetched.cache_headers.clear(spe::CacheField::age);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0),
                                  from_parent_as_sent(fetched, kT0 + 3, http_date(kT0)));
    judge.judge(first, kRequest);
    CHECK_FALSE(first.proxies[0].measure.cache->reused);

    auto reused = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "1", kT0);
    auto second = one_proxy_record(2, kT0 + 4, reply(1, kT0 + 0.001, "max-age=600", "tag-2", "4", kT0),
                                   from_parent_as_sent(reused, kT0 + 3, http_date(kT0)));
    judge.judge(second, kRequest);
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.reused);
    CHECK(rules(second.proxies[0].measure) == Rules{});
    CHECK(v.age_s.value() == Approx(1).margin(0.1));

    SECTION("an origin whose Date was behind when the Collector got it still makes the copy older") {
        auto late = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "1", kT0 - 9);
        auto third = one_proxy_record(3, kT0 + 4, reply(1, kT0 + 0.001, "max-age=600", "tag-3", "4", kT0 - 9),
                                      from_parent_as_sent(late, kT0 + 3, http_date(kT0 - 9)));
        judge.judge(third, kRequest);
        CHECK(rules(third.proxies[0].measure) == Rules{"age"});
    }
}

TEST_CASE("date: a reused reply keeps the Date it was stored with") {
    spe::CacheJudge judge({"p"});
    auto proxy = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
    auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0),
                                  from_parent(proxy, kT0 + 0.02, "0", kT0));
    judge.judge(first, kRequest);

    auto kept = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "2", kT0);
    auto second = one_proxy_record(2, kT0 + 2, reply(1, kT0 + 0.001, "max-age=600", "tag-2", "2", kT0),
                                   from_parent(kept, kT0 + 0.02, "0", kT0));
    judge.judge(second, kRequest);
    CHECK(rules(second.proxies[0].measure) == Rules{});
    const auto& exercised = second.proxies[0].measure.cache->exercised;
    CHECK(std::find(exercised.begin(), exercised.end(), "date") != exercised.end());
    CHECK(std::find(exercised.begin(), exercised.end(), "stored-fields") != exercised.end());

    auto regenerated = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "2", kT0 + 2);
    auto third = one_proxy_record(3, kT0 + 2, reply(1, kT0 + 0.001, "max-age=600", "tag-3", "2", kT0),
                                  from_parent(regenerated, kT0 + 0.02, "0", kT0));
    judge.judge(third, kRequest);
    REQUIRE(rules(third.proxies[0].measure) == Rules{"date"});
    CHECK(third.proxies[0].measure.cache->violations[0].section == "4, 3.2");
    // The Collector's own reply carries no parent's note: judged as before, no date rule.
    CHECK(rules(third.collector) == Rules{});
}

TEST_CASE("date: a hit that writes its own Date is named, with Age or without (Apache as a reverse proxy)") {
    // mod_cache serving a hit from its quick handler in a reverse proxy writes the time of the hit as Date
    // (httpd keeps a stored Date only for a proxy request: a forward proxy, as SPE runs it, keeps it). The
    // stored 200 has Date D, as its parent sent it; the hit 5 s later says D+5, with Apache's Age or none.
    for (const bool with_age : {true, false}) {
        spe::CacheJudge judge({"p"});
        auto stored = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "0", kT0);
        auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "0", kT0),
                                      from_parent(stored, kT0 + 0.02, "0", kT0));
        judge.judge(first, kRequest);

        auto hit = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "5", kT0 + 5);
        hit.cache_headers.field_names.add_list(" via x-cache");
        if (!with_age) hit.cache_headers.clear(spe::CacheField::age);
        auto second = one_proxy_record(2, kT0 + 5, reply(1, kT0 + 0.001, "max-age=3600", "tag-2", "5", kT0),
                                       from_parent(hit, kT0 + 0.02, "0", kT0));
        judge.judge(second, kRequest);
        const auto& v = *second.proxies[0].measure.cache;
        CHECK(v.reused);
        CHECK(rules(second.proxies[0].measure) == (with_age ? Rules{"date"} : Rules{"age", "date"}));
        const auto date = std::find_if(v.violations.begin(), v.violations.end(),
                                       [](const spe::Finding& f) { return f.rule == "date"; });
        REQUIRE(date != v.violations.end());
        CHECK(date->reason.find(http_date(kT0 + 5)) != std::string::npos);
        CHECK(date->reason.find(http_date(kT0)) != std::string::npos);
    }
}

TEST_CASE("date: a Date its parent sent invalid, or none, may be replaced (RFC 9110 6.6.1)") {
    // A recipient with a clock that receives an invalid Date MAY replace it with the time it received the
    // response; one that receives none MUST add one. Either way the hit's own Date is no violation.
    for (const auto& sent : {std::optional<std::string>("foo"), std::optional<std::string>()}) {
        spe::CacheJudge judge({"p"});
        auto stored = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "0", kT0);
        auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "0", kT0),
                                      from_parent_as_sent(stored, kT0 + 0.02, sent));
        judge.judge(first, kRequest);

        auto hit = reply(1, kT0 + 0.001, "max-age=3600", "tag-1", "5", kT0 + 5);  // its own Date
        auto second = one_proxy_record(2, kT0 + 5, reply(1, kT0 + 0.001, "max-age=3600", "tag-2", "5", kT0),
                                       from_parent_as_sent(hit, kT0 + 0.02, sent));
        judge.judge(second, kRequest);
        const auto& v = *second.proxies[0].measure.cache;
        CHECK(v.reused);
        CHECK(rules(second.proxies[0].measure) == Rules{});
        // No valid Date to keep: the rule was not put to the cache.
        CHECK(std::find(v.exercised.begin(), v.exercised.end(), "date") == v.exercised.end());
    }
}

TEST_CASE("stored-fields: a reused reply lacking an end-to-end field its parent sent") {
    const std::string sent = kNames + " set-cookie via x-cache x-cache-lookup connection age server content-encoding";
    // Via, X-Cache, Connection, Age, Server: a hop's own; Content-Encoding: a proxy may decode for a client that
    // does not accept the coding (RFC 9110 7.7; Varnish does); Set-Cookie: stored, so sent (RFC 9111 3.1).
    spe::CacheJudge judge({"p"});
    const auto second = reuse_after_parent_sent(judge, sent);
    const auto& v = *second.proxies[0].measure.cache;
    REQUIRE(rules(second.proxies[0].measure) == Rules{"stored-fields"});
    CHECK(v.violations[0].reason.find("set-cookie") != std::string::npos);
    CHECK(v.violations[0].reason.find("via") == std::string::npos);

    spe::CacheJudge other_cache({"p"});
    const auto kept = reuse_after_parent_sent(other_cache, sent, "set-cookie");
    CHECK(rules(kept.proxies[0].measure) == Rules{});

    SECTION("no-cache=\"set-cookie\" lets a cache leave the field out") {
        spe::CacheJudge other({"p"});
        const auto r2 = reuse_after_parent_sent(other, sent, "", R"(max-age=600, no-cache="set-cookie")");
        CHECK(rules(r2.proxies[0].measure) == Rules{});
    }
}

TEST_CASE(
    "stored-fields: the fields specific to the proxy a cache forwards through are never required (RFC 9111 3.1)") {
    // RFC 9111 3.1: header fields specific to the proxy a cache uses when forwarding MUST NOT be stored unless that
    // proxy is part of the cache key: Proxy-Authenticate, Proxy-Authentication-Info and Proxy-Authorization. A cache
    // that leaves them out of its copy does what it must; one that adds nothing else is not named.
    spe::CacheJudge judge({"p"});
    const auto second =
        reuse_after_parent_sent(judge, kNames + " proxy-authenticate proxy-authentication-info proxy-authorization");
    CHECK(rules(second.proxies[0].measure) == Rules{});
    const auto& exercised = second.proxies[0].measure.cache->exercised;
    CHECK(std::find(exercised.begin(), exercised.end(), "stored-fields") != exercised.end());
}

TEST_CASE(
    "connection-fields: a field its parent's Connection listed, forwarded or served from store (RFC 9110 7.6.1)") {
    // The parent sent Connection: X-Hop-Field, Keep-Alive with both fields (patch 0023 names them apart).
    const auto hop = [](spe::Measure& m, double t) -> spe::Measure& {
        m.cache_headers.set(spe::CacheField::parent,
                            fmt::format(R"(t={:.3f}; age="0"; date="{}"; connection="x-hop-field keep-alive"; )"
                                        R"(fields="{} connection")",
                                        t, http_date(kT0), kNames));
        return m;
    };
    const auto exercised = [](const spe::Measure& m) {
        const auto& e = m.cache->exercised;
        return std::find(e.begin(), e.end(), "connection-fields") != e.end();
    };
    spe::CacheJudge judge({"p"});
    SECTION("a miss that forwards the field is named; its own Keep-Alive is its hop's") {
        auto forwarded = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
        forwarded.cache_headers.field_names.add("x-hop-field");
        forwarded.cache_headers.field_names.add("keep-alive");
        auto r = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0),
                                  hop(forwarded, kT0 + 0.02));
        judge.judge(r, kRequest);
        REQUIRE(rules(r.proxies[0].measure) == Rules{"connection-fields"});
        const auto& reason = r.proxies[0].measure.cache->violations[0].reason;
        CHECK(reason.find("x-hop-field") != std::string::npos);
        CHECK(reason.find("keep-alive") == std::string::npos);
    }
    SECTION("a reuse of a copy stored with the field is named; one without it passes") {
        auto removed = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
        auto r1 =
            one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0), hop(removed, kT0 + 0.02));
        judge.judge(r1, kRequest);
        CHECK(rules(r1.proxies[0].measure) == Rules{});
        CHECK(exercised(r1.proxies[0].measure));

        auto stored = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "1", kT0);
        stored.cache_headers.field_names.add("x-hop-field");
        auto r2 = one_proxy_record(2, kT0 + 1, reply(1, kT0 + 0.001, "max-age=600", "tag-2", "1", kT0),
                                   hop(stored, kT0 + 0.02));
        judge.judge(r2, kRequest);
        CHECK(rules(r2.proxies[0].measure) == Rules{"connection-fields"});
    }
    SECTION("the hop's field names join the origin's (a repro case sends them), from a proxy's stamp of that fetch") {
        auto removed = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
        auto r =
            one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0), hop(removed, kT0 + 0.02));
        judge.judge(r, kRequest);
        REQUIRE(r.collector.cache->origin);
        CHECK(r.collector.cache->origin_connection == "x-hop-field keep-alive");
    }
    SECTION("a parent that listed nothing leaves the rule unexercised") {
        auto plain = reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0);
        plain.cache_headers.field_names.add("x-hop-field");
        auto r = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=600", "tag-1", "0", kT0),
                                  from_parent(plain, kT0 + 0.02, "0", kT0));
        judge.judge(r, kRequest);
        CHECK(rules(r.proxies[0].measure) == Rules{});
        CHECK_FALSE(exercised(r.proxies[0].measure));
    }
}

TEST_CASE("private-fields and no-cache-fields: a copy reused unvalidated with a field the qualified form named") {
    // RFC 9111 5.2.2.7: a shared cache does not store the fields private="..." names (it may store the
    // rest); 5.2.2.4: it does not send the fields no-cache="..." names without validating the copy.
    auto judged = [](const std::string& cc, const std::string& served_extra) {
        spe::CacheJudge judge({"p"});
        auto proxy = reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0);
        auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, cc, "tag-1", "0", kT0),
                                      from_parent(proxy, kT0 + 0.02, "0", kT0));
        judge.judge(first, kRequest);
        auto reused = reply(1, kT0 + 0.001, cc, "tag-1", "1", kT0);
        reused.cache_headers.field_names.add_list(served_extra);
        auto second = one_proxy_record(2, kT0 + 1, reply(1, kT0 + 0.001, cc, "tag-2", "1", kT0),
                                       from_parent(reused, kT0 + 0.02, "0", kT0));
        judge.judge(second, kRequest);
        REQUIRE(second.proxies[0].measure.cache->reused);
        return std::move(*second.proxies[0].measure.cache);
    };
    auto names = [](const spe::CacheVerdict& v) {
        std::vector<std::string> out;
        for (const auto& f : v.violations)
            out.emplace_back(f.rule);
        return out;
    };
    auto exercised = [](const spe::CacheVerdict& v, std::string_view rule) {
        return std::find(v.exercised.begin(), v.exercised.end(), rule) != v.exercised.end();
    };

    const auto kept_cookie = judged(R"(max-age=600, private="Set-Cookie")", " set-cookie");
    REQUIRE(names(kept_cookie) == Rules{"private-fields"});
    CHECK(kept_cookie.violations[0].section == "5.2.2.7");
    CHECK(kept_cookie.violations[0].reason.find("set-cookie") != std::string::npos);

    const auto left_out = judged(R"(max-age=600, private="Set-Cookie")", "");
    CHECK(names(left_out) == Rules{});
    CHECK(exercised(left_out, "private-fields"));
    CHECK_FALSE(exercised(left_out, "no-cache-fields"));

    const auto token = judged(R"(max-age=600, no-cache="X-Token, X-Other")", " x-token");
    REQUIRE(names(token) == Rules{"no-cache-fields"});
    CHECK(token.violations[0].section == "5.2.2.4");

    // Unqualified, the directives are the private and no-cache rules', not these.
    const auto plain = judged("max-age=600", " set-cookie x-token");
    CHECK_FALSE(exercised(plain, "private-fields"));
    CHECK_FALSE(exercised(plain, "no-cache-fields"));
}

TEST_CASE("header-update is judged by what the proxy's parent sent it, not by the origin's 304 (RFC 9111 4.3.4)") {
    // Fetch 1 said max-age=1. 5 s later the Collector revalidated it during the client's request: the origin's
    // 304 said max-age=2 (the Collector's reply shows it merged). What reached the proxy is known only from the
    // X-SPE-Parent on the copy it served.
    const auto judged = [](spe::Measure served) {
        spe::CacheJudge judge({"p"});
        auto proxy = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0);
        auto first = one_proxy_record(1, kT0, reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0),
                                      from_parent(proxy, kT0 + 0.02, "0", kT0));
        judge.judge(first, kRequest);
        auto merged = reply(1, kT0 + 0.001, "max-age=2", "tag-2", "0", kT0 + 5);
        merged.cache_headers.set(spe::CacheField::validated, fetch_stamp(9, kT0 + 5.005));
        auto second = one_proxy_record(2, kT0 + 5, merged, std::move(served));
        judge.judge(second, kRequest);
        CHECK(rules(second.collector) == Rules{});
        REQUIRE(second.proxies[0].measure.cache->reused);
        return std::move(*second.proxies[0].measure.cache);
    };
    const auto names = [](const spe::CacheVerdict& v) {
        Rules out;
        for (const auto& f : v.violations)
            out.emplace_back(f.rule);
        return out;
    };
    const auto exercised = [](const spe::CacheVerdict& v) {
        return std::find(v.exercised.begin(), v.exercised.end(), "header-update") != v.exercised.end();
    };

    SECTION("a copy that shows nothing from its parent during this request is judged by its staleness") {
        // Its X-SPE-Parent is the one it was stored with: the proxy did not ask, dropped its parent's reply or
        // asked only after serving (Varnish's grace). No update is known to have reached it: it served stale.
        auto old = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "5", kT0);
        const auto v = judged(from_parent(old, kT0 + 0.02, "0", kT0));
        CHECK(names(v) == Rules{"stale"});
        CHECK_FALSE(exercised(v));
    }
    SECTION("a copy that took its parent's 304 during this request must carry the fields that 304 carried") {
        auto kept_old = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5);
        const auto v = judged(from_parent(kept_old, kT0 + 5.02, "0", kT0 + 5, "date cache-control x-spe-fetch"));
        REQUIRE(names(v) == Rules{"header-update"});
        CHECK(v.violations[0].section == "4.3.4");
        CHECK(v.violations[0].reason.find("max-age=2") != std::string::npos);
        CHECK(exercised(v));
    }
    SECTION("a field its parent's 304 did not carry is kept as stored, rightly") {
        auto kept_old = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5);
        const auto v = judged(from_parent(kept_old, kT0 + 5.02, "0", kT0 + 5, "date x-spe-fetch"));
        CHECK(names(v) == Rules{});
        CHECK(exercised(v));
    }
    SECTION("a copy still fresh for the proxy may keep its fields") {
        auto fresh = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5);
        const auto v = judged(from_parent(fresh, kT0 + 4.9, "0", kT0 + 5));
        CHECK(names(v) == Rules{});
    }
}

TEST_CASE("a proxy that says it revalidated during this request is held to its parent's 304 (RFC 9111 4.3.4)") {
    // nginx with proxy_cache_revalidate keeps its stored header, X-SPE-Parent included, after its
    // parent's 304: only its Cache-Status (RFC 9211 fwd-status=304) says it asked. Fetch 1 said max-age=1;
    // 5 s later the Collector revalidated it with the origin during the client's request.
    const auto judged = [](const std::string& origin_304_cc, const std::string& cache_status) {
        spe::CacheJudge judge({"p"});
        judge_first_fetch(judge, "max-age=1");
        auto merged = reply(1, kT0 + 0.001, origin_304_cc, "tag-2", "0", kT0 + 5);
        merged.cache_headers.set(spe::CacheField::validated, fetch_stamp(9, kT0 + 5.005));
        auto kept = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0);
        from_parent(kept, kT0 + 0.02, "0", kT0);
        if (!cache_status.empty()) kept.cache_headers.set(spe::CacheField::cache_status, cache_status);
        auto second = one_proxy_record(2, kT0 + 5, merged, std::move(kept));
        judge.judge(second, kRequest);
        REQUIRE(second.proxies[0].measure.cache->reused);
        return second.proxies[0].measure;
    };
    constexpr auto kRevalidated = "p; fwd=stale; fwd-status=304";

    SECTION("the copy served with the fields the origin's 304 changed left as stored: header-update") {
        const auto m = judged("max-age=2", kRevalidated);
        REQUIRE(rules(m) == Rules{"header-update"});
        CHECK(m.cache->violations[0].reason.find("max-age=2") != std::string::npos);
        CHECK(m.cache->claim == spe::CacheClaim::revalidated);
    }
    SECTION("a 304 that changed nothing the judge reads: the copy is validated, neither stale nor aged") {
        CHECK(rules(judged("max-age=1", kRevalidated)) == Rules{});
    }
    SECTION("without the claim the copy looks served stale without asking, as before") {
        CHECK(rules(judged("max-age=2", "")) == Rules{"age", "stale"});
    }
}

TEST_CASE("header-update: an extension field the origin's 304 changed, served as the fetch first came (4.3.4)") {
    // Fetch 1 came with X-Version: 1 and max-age=1. 5 s later the Collector revalidated it during the client's
    // request; the origin's 304 said X-Version: 2 (the Collector's reply shows it merged). The validator kept
    // what the fetch first came with.
    const auto with_version = [](spe::Measure m, const std::string& version) {
        m.md5 = "d41d8cd98f00b204e9800998ecf8427e";
        const std::string cc(*m.cache_headers.get(spe::CacheField::cache_control));
        m.headers = {spe::ComparedHeader{"cache-control", cc}, spe::ComparedHeader{"x-version", version}};
        m.cache_headers.field_names.add("x-version");
        return m;
    };
    const auto judged = [&](spe::Measure served, bool first_known) {
        spe::CacheJudge judge({"p"});
        spe::FetchMemory first_replies;
        auto proxy = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0), "1");
        auto first = one_proxy_record(1, kT0, with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0), "1"),
                                      from_parent(proxy, kT0 + 0.02, "0", kT0));
        first_replies.remember("GET", first.collector);
        judge.judge(first, kRequest, first_known ? &first_replies : nullptr);
        auto merged = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-2", "0", kT0 + 5), "2");
        merged.cache_headers.set(spe::CacheField::validated, fetch_stamp(9, kT0 + 5.005));
        first_replies.remember("GET", merged);  // the same fetch: the first reply stays
        auto second = one_proxy_record(2, kT0 + 5, merged, std::move(served));
        judge.judge(second, kRequest, first_known ? &first_replies : nullptr);
        REQUIRE(second.proxies[0].measure.cache->reused);
        return rules(second.proxies[0].measure);
    };
    const std::string carried = "date cache-control x-version x-spe-fetch";

    SECTION("its parent's 304 carried the field, the copy kept the old value: header-update") {
        auto kept = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5), "1");
        CHECK(judged(from_parent(kept, kT0 + 5.02, "0", kT0 + 5, carried), true) == Rules{"header-update"});
        auto unjudged = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5), "1");
        CHECK(judged(from_parent(unjudged, kT0 + 5.02, "0", kT0 + 5, carried), false) == Rules{});
    }
    SECTION("the copy updated, or its parent's 304 did not carry the field: nothing") {
        auto updated = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5), "2");
        CHECK(judged(from_parent(updated, kT0 + 5.02, "0", kT0 + 5, carried), true) == Rules{});
        auto kept = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0 + 5), "1");
        CHECK(judged(from_parent(kept, kT0 + 5.02, "0", kT0 + 5, "date cache-control x-spe-fetch"), true) == Rules{});
    }
    SECTION("a cache that says it revalidated and kept its stored header (nginx): header-update") {
        auto kept = with_version(reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0), "1");
        from_parent(kept, kT0 + 0.02, "0", kT0);
        kept.cache_headers.set(spe::CacheField::cache_status, "p; fwd=stale; fwd-status=304");
        CHECK(judged(std::move(kept), true) == Rules{"header-update"});
    }
}

TEST_CASE("a copy a proxy said it revalidated is as old as that revalidation on its later reuses") {
    // Stored at kT0 with max-age=1, revalidated by the proxy's claim at kT0+5, reused 0.5 s later (a
    // claimed hit, its header and X-SPE-Parent still the stored ones): fresh, neither stale nor aged.
    spe::CacheJudge judge({"p"});
    judge_first_fetch(judge, "max-age=1");
    const auto kept = [](const std::string& cache_status) {
        auto m = reply(1, kT0 + 0.001, "max-age=1", "tag-1", "0", kT0);
        from_parent(m, kT0 + 0.02, "0", kT0);
        m.cache_headers.set(spe::CacheField::cache_status, cache_status);
        return m;
    };
    auto merged = reply(1, kT0 + 0.001, "max-age=1", "tag-2", "0", kT0 + 5);
    merged.cache_headers.set(spe::CacheField::validated, fetch_stamp(9, kT0 + 5.005));
    auto second = one_proxy_record(2, kT0 + 5, merged, kept("p; fwd=stale; fwd-status=304"));
    judge.judge(second, kRequest);
    CHECK(rules(second.proxies[0].measure) == Rules{});
    // The Collector's copy, revalidated with the origin during this request, is recorded with the fields the
    // origin's 304 left it with (`origin`): a repro case's stand-in origin answers with them from then on.
    REQUIRE(second.collector.cache->reused);
    REQUIRE(second.collector.cache->origin);
    CHECK(second.collector.cache->origin->date() == merged.cache_headers.date());
    auto third =
        one_proxy_record(3, kT0 + 5.5, reply(1, kT0 + 0.001, "max-age=1", "tag-3", "0", kT0 + 5), kept("p; hit"));
    judge.judge(third, kRequest);
    REQUIRE(third.proxies[0].measure.cache->reused);
    CHECK(rules(third.proxies[0].measure) == Rules{});
    // Past the lifetime counted from that revalidation it is stale again.
    auto fourth =
        one_proxy_record(4, kT0 + 8, reply(1, kT0 + 0.001, "max-age=1", "tag-4", "0", kT0 + 5), kept("p; hit"));
    judge.judge(fourth, kRequest);
    CHECK(rules(fourth.proxies[0].measure) == Rules{"age", "stale"});
}

TEST_CASE("a copy a proxy stored after its own unsafe request is not invalidated by it") {
    // The client's GET after its POST reached the Collector (fetch 2) while the proxy's turn still
    // waited behind the POST's replay; the proxy's POST invalidated, then its GET stored fetch 2,
    // older than that POST by the origin's clock but sent to the proxy after it (X-SPE-Parent's t).
    spe::CacheJudge judge({"p"});
    judge.note_unsafe(0, "http://o/x", 200, kT0 + 0.1);
    auto stored = reply(2, kT0, "max-age=3600", "tag-1", "0", kT0);
    auto first = one_proxy_record(1, kT0, reply(2, kT0, "max-age=3600", "tag-1", "0", kT0),
                                  from_parent(stored, kT0 + 0.2, "0", kT0));
    first.proxies[0].sent_at = kT0 + 0.19;
    judge.judge(first, kRequest);
    auto reused = reply(2, kT0, "max-age=3600", "tag-1", "1", kT0);
    auto second = one_proxy_record(2, kT0 + 1, reply(2, kT0, "max-age=3600", "tag-2", "1", kT0),
                                   from_parent(reused, kT0 + 0.2, "0", kT0));
    judge.judge(second, kRequest);
    CHECK(second.proxies[0].measure.cache->reused);
    CHECK(rules(second.proxies[0].measure) == Rules{});

    SECTION("a copy it got before the unsafe request is") {
        judge.note_unsafe(0, "http://o/x", 200, kT0 + 1.5);
        auto third = one_proxy_record(3, kT0 + 2, reply(2, kT0, "max-age=3600", "tag-3", "2", kT0),
                                      from_parent(reused, kT0 + 0.2, "0", kT0));
        judge.judge(third, kRequest);
        CHECK(rules(third.proxies[0].measure) == Rules{"invalidation"});
    }
}

TEST_CASE("a copy updated from a 304 is fresh by the fields the 304 brought (RFC 9111 3.2, 4.3.4)") {
    // The fetch said max-age=1; 2 s later the cache revalidated and merged the origin's 304, which said
    // max-age=600 (X-SPE-Validated on the copy); reused 3 s after that, the copy is fresh.
    spe::CacheJudge judge({"p"});
    auto fetched = reply(1, kT0, "max-age=1", "tag-1", "0", kT0);
    auto first =
        one_proxy_record(1, kT0, reply(1, kT0, "max-age=1", "tag-1", "0", kT0), from_parent(fetched, kT0, "0", kT0));
    judge.judge(first, kRequest);
    auto merged = reply(1, kT0, "max-age=600", "tag-1", "3", kT0 + 2);  // the 304's Date, merged
    merged.cache_headers.set(spe::CacheField::validated, fetch_stamp(2, kT0 + 2));
    auto second = one_proxy_record(3, kT0 + 5, reply(1, kT0, "max-age=600", "tag-3", "3", kT0),
                                   from_parent(merged, kT0 + 2, "0", kT0 + 2));
    judge.judge(second, kRequest);
    CHECK(second.proxies[0].measure.cache->reused);
    CHECK(rules(second.proxies[0].measure) == Rules{});

    SECTION("without the merge (no validation on the copy) the first header's max-age=1 decides") {
        auto old = reply(1, kT0, "max-age=1", "tag-1", "5", kT0);
        auto third = one_proxy_record(4, kT0 + 5, reply(1, kT0, "max-age=600", "tag-4", "3", kT0),
                                      from_parent(old, kT0, "0", kT0));
        judge.judge(third, kRequest);
        CHECK(rules(third.proxies[0].measure) == Rules{"stale"});
    }
}

TEST_CASE("stale: a copy whose Age on arrival exceeds its Expires - Date lifetime is stale on arrival (RFC 9111 4.2)") {
    // The origin's reply: Date 10 s in the past, Expires 10 s ahead (a lifetime of 20 s) and Age: 25. It was
    // stale when it reached the proxy; reusing it unvalidated is `stale`, whatever Date the proxy then serves.
    spe::CacheJudge judge({"p"});
    const auto with_expires = [](spe::Measure m) {
        m.cache_headers.set(spe::CacheField::expires, http_date(kT0 + 10));
        m.cache_headers.field_names.add("expires");
        return m;
    };
    auto proxy = with_expires(reply(1, kT0 + 0.001, "", "tag-1", "25", kT0 - 10));
    auto first = one_proxy_record(1, kT0, with_expires(reply(1, kT0 + 0.001, "", "tag-1", "25", kT0 - 10)),
                                  from_parent(proxy, kT0 + 0.02, "25", kT0 - 10, kNames + " expires"));
    judge.judge(first, kRequest);

    auto reused = with_expires(reply(1, kT0 + 0.001, "", "tag-1", "26", kT0 - 10));
    auto second = one_proxy_record(2, kT0 + 1, with_expires(reply(2, kT0 + 1.001, "", "tag-2", "25", kT0 - 9)),
                                   from_parent(reused, kT0 + 0.02, "25", kT0 - 10, kNames + " expires"));
    judge.judge(second, kRequest);
    CHECK(second.proxies[0].measure.cache->reused);
    CHECK(rules(second.proxies[0].measure) == Rules{"stale"});

    SECTION("served with a Date of its own, as nginx does: both rules") {
        auto own_date = with_expires(reply(1, kT0 + 0.001, "", "tag-1", "26", kT0 + 2));
        auto third = one_proxy_record(3, kT0 + 2, with_expires(reply(3, kT0 + 2.001, "", "tag-3", "25", kT0 - 8)),
                                      from_parent(own_date, kT0 + 0.02, "25", kT0 - 10, kNames + " expires"));
        judge.judge(third, kRequest);
        CHECK(rules(third.proxies[0].measure) == Rules{"date", "stale"});
    }
}
