// The cache-rule judge's rules (RFC 9111), one reused copy at a time.
#include "http/http_date.hpp"
#include "http/reply_header.hpp"
#include "http/secret_digest.hpp"
#include "judge/cache_claims.hpp"
#include "judge/cache_control.hpp"
#include "judge/cache_rules.hpp"
#include "judge/fetch_stamp.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <charconv>
#include <string>

namespace {

using spe::CacheHeaders;
using spe::KnownFetch;

constexpr double kFetchedAt = 1'700'000'000.0;
const std::string kRequest = "GET http://o/x HTTP/1.1\r\nHost: o\r\nAccept-Language: en\r\n\r\n";

std::string http_date(double t) {
    char buf[64];
    std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return buf;
}

KnownFetch fetch(std::string cache_control, unsigned status = 200) {
    KnownFetch f;
    f.stamp = *spe::parse_fetch_stamp("65f1-1c2.7; t=1700000000.000");
    f.status = status;
    if (!cache_control.empty()) f.headers.set(spe::CacheField::cache_control, cache_control);
    f.headers.set(spe::CacheField::date, http_date(kFetchedAt));
    f.first_seen = kFetchedAt;
    return f;
}

/// The rule ids that forbid reusing `f` for `request` `after` seconds past the fetch.
std::vector<std::string> barriers(const KnownFetch& f, const std::string& request = kRequest, double after = 1,
                                  std::optional<double> validated_at = std::nullopt,
                                  std::optional<double> invalidated_at = std::nullopt,
                                  std::optional<std::string> coding = std::nullopt,
                                  const spe::StoredFor& stored_for = {}) {
    const auto facts = spe::request_facts("GET", "http://o/x", request);
    const spe::ReuseQuestion q{
        f, facts, &stored_for, kFetchedAt + after, kFetchedAt + after - 0.01, validated_at, invalidated_at, coding};
    std::vector<std::string> out;
    std::vector<spe::Finding> advisories;
    for (const auto& b : spe::reuse_barriers(q, &advisories))
        out.emplace_back(b.rule);
    for (const auto& a : advisories)  // the request's directives: advisory (5.2.1), marked as such
        if (a.rule != "heuristic") out.emplace_back("advisory:" + std::string(a.rule));
    return out;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("HTTP dates in the three forms, and Cache-Control directives") {
    CHECK(spe::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
    CHECK(spe::parse_http_date("Tue, 29 Feb 2028 23:59:60 GMT") == 1835481600);  // leap day, leap second
    CHECK(spe::parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
    CHECK_FALSE(spe::parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"));
    CHECK_FALSE(spe::parse_http_date("Sun, 06 Nov 1994 08:49:37 UTC"));
    for (std::int64_t t : {784111777LL, 1700000000LL, 1732412345LL, 951782400LL, 4102444800LL}) {
        char buf[64];
        std::time_t tt = static_cast<std::time_t>(t);
        std::tm tm{};
        gmtime_r(&tt, &tm);
        std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        CHECK(spe::parse_http_date(buf) == t);
    }
    CHECK(spe::parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777);
    CHECK(spe::parse_http_date("Sun Nov  6 08:49:37 1994") == 784111777);
    CHECK_FALSE(spe::parse_http_date("0"));
    CHECK_FALSE(spe::parse_http_date("tomorrow"));
    const auto cc =
        spe::parse_cache_control("public, max-age=60, s-maxage=\"30\", no-cache=\"Set-Cookie, X\", Private");
    CHECK(cc.public_);
    CHECK(cc.max_age == 60);
    CHECK(cc.s_maxage == 30);
    CHECK(cc.no_cache_fields);
    CHECK_FALSE(cc.no_cache);
    CHECK(cc.private_);
    CHECK_FALSE(spe::parse_cache_control("max-age=abc").max_age);  // unparseable: absent, and flagged
    CHECK(spe::parse_cache_control("max-age=abc").max_age_invalid);
}

TEST_CASE("qualified private and no-cache keep the field names they list") {
    const auto cc = spe::parse_cache_control(R"(private="Set-Cookie, X-Token", no-cache=X-A, max-age=5)");
    CHECK(cc.private_fields);
    CHECK_FALSE(cc.private_);
    CHECK(cc.private_names == "set-cookie x-token");
    CHECK(cc.no_cache_names == "x-a");
    CHECK(cc.max_age == 5);
    const auto found = spe::qualified_fields_findings(cc, spe::FieldNameSet::of("date x-token content-type x-a"));
    REQUIRE(found.size() == 2);
    CHECK(found[0].rule == "private-fields");
    CHECK(found[0].reason.find("carries x-token") != std::string::npos);
    CHECK(found[1].rule == "no-cache-fields");
    CHECK(spe::qualified_fields_findings(cc, spe::FieldNameSet::of("date content-type")).empty());
    CHECK(spe::qualified_fields_findings(spe::parse_cache_control("private, no-cache"),
                                         spe::FieldNameSet::of("set-cookie"))
              .empty());
}

TEST_CASE("fetch stamps parse, and anything else does not") {
    const auto s = spe::parse_fetch_stamp("65f1a2b3-1c2.42; t=1732412345.123");
    REQUIRE(s);
    CHECK(s->id == "65f1a2b3-1c2.42");
    CHECK(s->collector() == "65f1a2b3-1c2");
    CHECK(s->serial == 42);
    CHECK(s->time == Approx(1732412345.123));
    CHECK_FALSE(spe::parse_fetch_stamp("forged"));
    CHECK_FALSE(spe::parse_fetch_stamp("65f1a2b3-1c2.x; t=1"));
    CHECK_FALSE(spe::parse_fetch_stamp("zz-1.4; t=1"));
    CHECK_FALSE(spe::parse_fetch_stamp("65f1-1c2.4; t=-5"));
    CHECK_FALSE(spe::parse_fetch_stamp("65f1-1c2.4; t=1.5x"));
    CHECK_FALSE(spe::parse_fetch_stamp(std::string(60, 'a') + "-1.4; t=1"));  // longer than any Collector's id
}

TEST_CASE("a validation stamp names the length its 304 carried, and stays the same stamp") {
    // Collector patch 0027: X-SPE-Validated ends with "; length=N" when the origin's 304 had a Content-Length.
    const auto with = spe::parse_fetch_stamp("65f1a2b3-1c2.42; t=1732412345.123; length=0");
    REQUIRE(with);
    CHECK(with->id == "65f1a2b3-1c2.42");
    CHECK(with->time == Approx(1732412345.123));
    CHECK(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123; length=0") == 0U);
    CHECK(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123;length=1234") == 1234U);
    CHECK_FALSE(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123"));
    CHECK_FALSE(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123; length="));
    CHECK_FALSE(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123; length=-1"));
    CHECK_FALSE(spe::validation_length("65f1a2b3-1c2.42; t=1732412345.123; length=5x"));
    CHECK_FALSE(spe::validation_length("forged; length=0"));  // not a stamp: nothing of it is read
}

TEST_CASE("stamp times read as the same double as a general decimal parse") {
    for (std::string_view t : {"1732412345.123", "1795495153.071", "1700000000.000", "1700000000.1", "1732412345",
                               "1732412345.999999", "1732412345.1234567", "0.001", "12345678901.5"}) {
        double general = 0;
        std::from_chars(t.data(), t.data() + t.size(), general);
        REQUIRE(spe::parse_unix_seconds(t));
        CHECK(*spe::parse_unix_seconds(t) == general);
    }
    CHECK_FALSE(spe::parse_unix_seconds("1e9"));
    CHECK_FALSE(spe::parse_unix_seconds(".5"));
    CHECK_FALSE(spe::parse_unix_seconds("5."));
}

TEST_CASE("what a shared cache must not store is flagged when reused, by rule") {
    CHECK(barriers(fetch("max-age=600")).empty());
    CHECK(barriers(fetch("no-store, max-age=600")) == V{"no-store"});
    CHECK(barriers(fetch("private, max-age=600")) == V{"private"});
    CHECK(barriers(fetch("private=\"Set-Cookie\", max-age=600")).empty());  // the qualified form allows storing
    const spe::StoredFor for_authorization{.authorization = true, .no_store = false, .vary = {}};
    CHECK(barriers(fetch("max-age=600"), kRequest, 1, {}, {}, {}, for_authorization) == V{"authorization"});
    for (auto cc : {"public, max-age=600", "s-maxage=600", "must-revalidate, max-age=600"})
        CHECK(barriers(fetch(cc), kRequest, 1, {}, {}, {}, for_authorization).empty());
    const spe::StoredFor for_no_store{.authorization = false, .no_store = true, .vary = {}};
    CHECK(barriers(fetch("max-age=600"), kRequest, 1, {}, {}, {}, for_no_store) == V{"advisory:request-no-store"});
}

TEST_CASE("stale copies: the rule named is the strictest directive that forbade it") {
    CHECK(barriers(fetch("max-age=10"), kRequest, 9).empty());
    CHECK(barriers(fetch("max-age=10"), kRequest, 20) == V{"stale"});
    CHECK(barriers(fetch("max-age=10, must-revalidate"), kRequest, 20) == V{"must-revalidate"});
    CHECK(barriers(fetch("max-age=10, proxy-revalidate"), kRequest, 20) == V{"proxy-revalidate"});
    CHECK(barriers(fetch("s-maxage=10, max-age=600"), kRequest, 20) == V{"s-maxage"});
    CHECK(barriers(fetch("max-age=10, stale-while-revalidate=30"), kRequest, 20).empty());
    const std::string max_stale = "GET http://o/x HTTP/1.1\r\nCache-Control: max-stale=60\r\n\r\n";
    CHECK(barriers(fetch("max-age=10"), max_stale, 20).empty());
    // Arrived with an Age beyond its lifetime: stale from the start.
    auto aged = fetch("max-age=3600");
    aged.headers.set(spe::CacheField::age, "7200");
    CHECK(barriers(aged, kRequest, 1) == V{"stale"});
    // Expires: invalid means already expired; a future one gives the lifetime.
    auto bad_expires = fetch("");
    bad_expires.status = 302;
    bad_expires.headers.set(spe::CacheField::expires, "0");
    CHECK(barriers(bad_expires, kRequest, 5) == V{"stale"});
    auto expires = fetch("");
    expires.headers.set(spe::CacheField::expires, http_date(kFetchedAt + 100));
    CHECK(barriers(expires, kRequest, 50).empty());
    CHECK(barriers(expires, kRequest, 150) == V{"stale"});
    // A validation the origin confirmed restarts the clock, from the validation's own Date.
    CHECK(barriers(fetch("max-age=10"), kRequest, 20, kFetchedAt + 15).empty());
    auto late_in_its_second = fetch("max-age=2");  // fetched 0.9 s into a second: Date says 0.9 s old
    late_in_its_second.stamp.time = kFetchedAt + 0.9;
    late_in_its_second.first_seen = kFetchedAt + 0.9;
    CHECK(barriers(late_in_its_second, kRequest, 4.5) == V{"stale"});  // 0.9 + 3.6 s: past 2 s + slack
    // Revalidated 0.2 s into a second, served 2.7 s later: 2.9 s old by the 304's Date, not 3.6.
    CHECK(barriers(late_in_its_second, kRequest, 12.9, kFetchedAt + 10.2).empty());
    // No explicit lifetime and a status that is not heuristically cacheable: nothing allows reuse.
    CHECK(barriers(fetch("", 302), kRequest, 5) == V{"stale"});
    // Heuristic freshness is a MAY: an advisory beyond 10 %, not a violation.
    auto heuristic = fetch("");
    heuristic.headers.set(spe::CacheField::last_modified, http_date(kFetchedAt - 100));
    const auto facts = spe::request_facts("GET", "http://o/x", kRequest);
    std::vector<spe::Finding> advisories;
    CHECK(spe::reuse_barriers({heuristic, facts, nullptr, kFetchedAt + 30, kFetchedAt + 30, {}, {}, {}}, &advisories)
              .empty());
    REQUIRE(advisories.size() == 1);
    CHECK(advisories[0].rule == "heuristic");
}

TEST_CASE("validation the reply or the request demands") {
    CHECK(barriers(fetch("no-cache, max-age=600")) == V{"no-cache"});
    // Validated during this request (the Collector's X-SPE-Validated is newer than the request).
    CHECK(barriers(fetch("no-cache, max-age=600"), kRequest, 20, kFetchedAt + 20).empty());
    const auto reload = "GET http://o/x HTTP/1.1\r\nCache-Control: no-cache\r\n\r\n";
    CHECK(barriers(fetch("max-age=600"), reload) == V{"advisory:request-no-cache"});
    const auto pragma = "GET http://o/x HTTP/1.1\r\nPragma: no-cache\r\n\r\n";
    CHECK(barriers(fetch("max-age=600"), pragma) == V{"advisory:request-no-cache"});
    const auto pragma_with_cc = "GET http://o/x HTTP/1.1\r\nPragma: no-cache\r\nCache-Control: max-stale\r\n\r\n";
    CHECK(barriers(fetch("max-age=600"), pragma_with_cc).empty());  // Cache-Control present: Pragma ignored (5.4)
    const auto max_age_0 = "GET http://o/x HTTP/1.1\r\nCache-Control: max-age=0\r\n\r\n";
    CHECK(barriers(fetch("max-age=600"), max_age_0) == V{"advisory:request-max-age"});
    const auto max_age_5 = "GET http://o/x HTTP/1.1\r\nCache-Control: max-age=5\r\n\r\n";
    CHECK(barriers(fetch("max-age=600"), max_age_5, 3).empty());
    CHECK(barriers(fetch("max-age=600"), max_age_5, 30) == V{"advisory:request-max-age"});
}

TEST_CASE("Vary: the stored variant must match this request's selecting fields") {
    auto f = fetch("max-age=600");
    f.headers.set(spe::CacheField::vary, "Accept-Language");
    const spe::StoredFor en{
        .vary = spe::vary_values(spe::request_facts("GET", "u", kRequest), spe::vary_names(*f.headers.vary()))};
    auto vary = [&](const spe::KnownFetch& fetch, const std::string& request, const spe::StoredFor& stored,
                    std::optional<std::string> coding = std::nullopt) {
        return barriers(fetch, request, 1, {}, {}, std::move(coding), stored);
    };
    CHECK(vary(f, kRequest, en).empty());
    CHECK(vary(f, "GET http://o/x HTTP/1.1\r\nAccept-Language:  EN \r\n\r\n", en).empty());  // normalized
    CHECK(vary(f, "GET http://o/x HTTP/1.1\r\nAccept-Language: de\r\n\r\n", en) == V{"vary"});
    CHECK(vary(f, "GET http://o/x HTTP/1.1\r\n\r\n", en) == V{"vary"});
    auto star = fetch("max-age=600");
    star.headers.set(spe::CacheField::vary, "*");
    CHECK(vary(star, kRequest,
               {.vary = spe::vary_values(spe::request_facts("GET", "u", kRequest), spe::vary_names("*"))}) ==
          V{"vary"});
    // Accept-Encoding: judged by whether this request accepts the coding served.
    auto ae = fetch("max-age=600");
    ae.headers.set(spe::CacheField::vary, "Accept-Encoding");
    const spe::StoredFor gzip_br{
        .vary = spe::vary_values(spe::request_facts("GET", "u", "GET / HTTP/1.1\r\nAccept-Encoding: gzip, br\r\n\r\n"),
                                 {"accept-encoding"})};
    const auto gzip_deflate = "GET http://o/x HTTP/1.1\r\nAccept-Encoding: gzip, deflate\r\n\r\n";
    CHECK(vary(ae, gzip_deflate, gzip_br, "gzip").empty());
    const auto identity_only = "GET http://o/x HTTP/1.1\r\nAccept-Encoding: identity\r\n\r\n";
    CHECK(vary(ae, identity_only, gzip_br, "gzip") == V{"vary"});
    CHECK(vary(ae, identity_only, gzip_br).empty());
    // A weight of zero refuses the coding (RFC 9110 12.4.2), written with or without decimals.
    for (const auto* weight : {"0", "0.", "0.000", "0.0"}) {
        INFO(weight);
        const auto refused =
            std::string("GET http://o/x HTTP/1.1\r\nAccept-Encoding: br, gzip;q=") + weight + "\r\n\r\n";
        CHECK(vary(ae, refused, gzip_br, "gzip") == V{"vary"});
    }
    for (const auto* weight : {"0.001", "1", "0.5"}) {
        INFO(weight);
        const auto accepted =
            std::string("GET http://o/x HTTP/1.1\r\nAccept-Encoding: br, gzip ; Q=") + weight + "\r\n\r\n";
        CHECK(vary(ae, accepted, gzip_br, "gzip").empty());
    }
}

TEST_CASE("Vary: a copy the origin confirmed during this request was selected by its 304, not matched") {
    // RFC 9111 4.1: a stored reply that does not match (Vary: *, another variant) cannot satisfy the request
    // by itself; the cache asks the origin with its validators, and the 304 selects the stored reply (4.3.4).
    auto star = fetch("max-age=600");
    star.headers.set(spe::CacheField::vary, "*");
    const spe::StoredFor stored{.vary =
                                    spe::vary_values(spe::request_facts("GET", "u", kRequest), spe::vary_names("*"))};
    const double now = kFetchedAt + 10;  // validated just after this request left (barriers' request_at)
    CHECK(barriers(star, kRequest, 10, now, {}, {}, stored).empty());
    CHECK(barriers(star, kRequest, 10, kFetchedAt + 5, {}, {}, stored) == V{"vary"});  // confirmed earlier: no
    auto lang = fetch("max-age=600");
    lang.headers.set(spe::CacheField::vary, "Accept-Language");
    const spe::StoredFor en{.vary = spe::vary_values(spe::request_facts("GET", "u", kRequest), {"accept-language"})};
    const auto de = "GET http://o/x HTTP/1.1\r\nAccept-Language: de\r\n\r\n";
    CHECK(barriers(lang, de, 10, now, {}, {}, en).empty());
}

TEST_CASE("a copy stored before a successful unsafe request is invalid after it") {
    CHECK(barriers(fetch("max-age=600"), kRequest, 10, {}, kFetchedAt + 5) == V{"invalidation"});
    CHECK(barriers(fetch("max-age=600"), kRequest, 10, {}, kFetchedAt - 5).empty());
}

TEST_CASE("a reused reply must carry its true Age") {
    const auto f = fetch("max-age=600");
    const auto facts = spe::request_facts("GET", "http://o/x", kRequest);
    const spe::ReuseQuestion q{f, facts, nullptr, kFetchedAt + 30, kFetchedAt + 30, {}, {}, {}};
    CHECK(spe::age_finding(q, 200, std::nullopt)->rule == "age");
    CHECK(spe::age_finding(q, 200, std::string("3"))->rule == "age");  // understated
    CHECK_FALSE(spe::age_finding(q, 200, std::string("30")));
    CHECK_FALSE(spe::age_finding(q, 200, std::string("29")));  // whole seconds, rounded down
    CHECK_FALSE(spe::age_finding(q, 304, std::nullopt));
    const spe::ReuseQuestion young{f, facts, nullptr, kFetchedAt + 0.5, kFetchedAt + 0.5, {}, {}, {}};
    CHECK_FALSE(spe::age_finding(young, 200, std::nullopt));  // Age 0 omitted, as Squid does
}

TEST_CASE("Age is delta-seconds: an invalid one is ignored, a huge one is 2^31 (RFC 9111 5.1, 1.2.2)") {
    const auto aged = [](const std::string& cc, const std::string& age) {
        auto f = fetch(cc);
        f.headers.set(spe::CacheField::age, age);
        return f;
    };
    // Invalid (a suffix, a sign, a fraction, not a number): ignored, as 5.1 says a cache SHOULD, so the copy is
    // as old as its Date makes it, not as old as the digits in front of a suffix say.
    for (const std::string bad : {"10s", "-1", "-7200", "abc", "", "7.5", "+10", "10 s"})
        CHECK(barriers(aged("max-age=5", bad), kRequest, 1).empty());
    // A list: the first member counts, the rest are discarded (5.1).
    CHECK(barriers(aged("max-age=5", "7200, 0"), kRequest, 1) == V{"stale"});
    CHECK(barriers(aged("max-age=5", "0, 7200"), kRequest, 1).empty());
    // Huge: 2147483648, or more than any integer holds, is 2^31 (1.2.2): stale for any max-age below it.
    CHECK(barriers(aged("max-age=3600", "2147483648"), kRequest, 1) == V{"stale"});
    CHECK(barriers(aged("max-age=3600", "99999999999999999999"), kRequest, 1) == V{"stale"});
    CHECK(barriers(aged("max-age=3600", "18446744073709551616"), kRequest, 1) == V{"stale"});

    // The reused reply's own Age: one that is no delta-seconds is no Age (4: a cache MUST generate one).
    const auto f = fetch("max-age=600");
    const auto facts = spe::request_facts("GET", "http://o/x", kRequest);
    const spe::ReuseQuestion q{f, facts, nullptr, kFetchedAt + 30, kFetchedAt + 30, {}, {}, {}};
    const auto age_rule = [&](const std::string& age) {
        const auto found = spe::age_finding(q, 200, age);
        return found ? std::string(found->rule) : std::string("(none)");
    };
    CHECK(age_rule("30s") == "age");
    CHECK(age_rule("-30") == "age");
    CHECK(age_rule("30, 2") == "(none)");                 // the first member
    CHECK(age_rule("99999999999999999999") == "(none)");  // 2^31: not below the copy's age
}

TEST_CASE("age cites the catalogue's sections whichever way its Age is wrong (RFC 9111 4, 5.1)") {
    const auto f = fetch("max-age=600");
    const auto facts = spe::request_facts("GET", "http://o/x", kRequest);
    const spe::ReuseQuestion q{f, facts, nullptr, kFetchedAt + 30, kFetchedAt + 30, {}, {}, {}};
    // Missing (4), understated (4), no delta-seconds (5.1): one rule, one section, as --list-cache-rules says.
    for (const auto& age :
         {std::optional<std::string>{}, std::optional<std::string>{"3"}, std::optional<std::string>{"30s"}}) {
        const auto found = spe::age_finding(q, 200, age);
        REQUIRE(found);
        CHECK(found->section == "4, 5.1");
    }
}

TEST_CASE("max-age and s-maxage are delta-seconds, in token or quoted-string form (RFC 9111 1.2.2, 5.2)") {
    CHECK(spe::parse_cache_control("max-age=\"3600\"").max_age == 3600);  // recipients accept both forms
    CHECK(spe::parse_cache_control("max-age=003600").max_age == 3600);
    CHECK(spe::parse_cache_control("max-age=99999999999999999999").max_age == 2147483648);  // 1.2.2: 2^31
    CHECK(spe::parse_cache_control("s-maxage=2147483649").s_maxage == 2147483648);
    // A suffix or a sign after digits too many for any integer is still no delta-seconds.
    for (const char* bad : {"max-age=99999999999999999999s", "max-age=-99999999999999999999", "max-age=\"36",
                            "max-age=\"3600\"s", "max-age='3600'", "max-age=3600s", "max-age=-1", "max-age=", "max-age",
                            "max-age=\"\"", "max-age=\" 3600\""}) {
        INFO(bad);
        CHECK_FALSE(spe::parse_cache_control(bad).max_age);
    }
}

TEST_CASE("a 304 must match the request's validators") {
    CacheHeaders reply;
    reply.set(spe::CacheField::etag, "\"v2\"");
    auto inm = spe::request_facts("GET", "u", "GET u HTTP/1.1\r\nIf-None-Match: \"v1\", W/\"v2\"\r\n\r\n");
    CHECK_FALSE(spe::not_modified_finding(inm, reply, nullptr));
    auto other = spe::request_facts("GET", "u", "GET u HTTP/1.1\r\nIf-None-Match: \"v1\"\r\n\r\n");
    CHECK(spe::not_modified_finding(other, reply, nullptr)->rule == "not-modified");
    CacheHeaders modified;
    modified.set(spe::CacheField::last_modified, "Sun, 06 Nov 1994 08:49:37 GMT");
    auto ims =
        spe::request_facts("GET", "u", "GET u HTTP/1.1\r\nIf-Modified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n\r\n");
    CHECK(spe::not_modified_finding(ims, modified, nullptr)->rule == "not-modified");
    // A 304 without ETag (Squid 5.7 sends none): wrong only if the stored fetch is known to have had none.
    const CacheHeaders bare;
    CHECK_FALSE(spe::not_modified_finding(other, bare, nullptr));
    CHECK(spe::not_modified_finding(other, bare, &modified)->reason ==
          "a 304 to If-None-Match for a reply without ETag");
    CHECK_FALSE(spe::not_modified_finding(other, bare, &reply) == std::nullopt);  // the fetch's "v2" is not "v1"
}

TEST_CASE("a cache's own claim, apart from the Collector's") {
    CacheHeaders h;
    h.set(spe::CacheField::x_cache, "MISS from collector, HIT from squid");
    CHECK(spe::cache_claim(h, {"collector"}) == spe::CacheClaim::hit);
    h.set(spe::CacheField::x_cache, "MISS from collector");
    CHECK(spe::cache_claim(h, {"collector"}) == spe::CacheClaim::none);
    CacheHeaders cs;
    cs.set(spe::CacheField::cache_status, "collector; fwd=uri-miss, ExampleCache; hit; ttl=30");
    CHECK(spe::cache_claim(cs, {"collector"}) == spe::CacheClaim::hit);
    cs.set(spe::CacheField::cache_status, "ExampleCache; fwd=stale; stored");
    CHECK(spe::cache_claim(cs, {}) == spe::CacheClaim::miss);
    // RFC 9211 2.5: fwd-status is what the next hop answered; a 304 to the cache's own forward means it
    // revalidated its copy during this request and served it.
    cs.set(spe::CacheField::cache_status, "nginx; fwd=stale; fwd-status=304");
    CHECK(spe::cache_claim(cs, {}) == spe::CacheClaim::revalidated);
    cs.set(spe::CacheField::cache_status, "nginx; fwd=stale; fwd-status=200");
    CHECK(spe::cache_claim(cs, {}) == spe::CacheClaim::miss);
    cs.set(spe::CacheField::cache_status, "nginx; fwd=stale; fwd-status=3040");
    CHECK(spe::cache_claim(cs, {}) == spe::CacheClaim::miss);
    CHECK(spe::claim_names(h) == std::vector<std::string>{"collector"});
}

TEST_CASE("the judged reply fields are taken in one pass, repeated ones joined") {
    boost::beast::http::fields f;
    f.insert("Cache-Control", "max-age=60");
    f.insert("cache-control", "public");
    f.insert("X-Cache", "MISS from collector");
    f.insert("x-cache", "HIT from squid");
    f.insert("X-SPE-Reply-To", "abc-1");
    f.insert("Set-Cookie", "a=b");
    f.insert("Age", "3");
    const auto h = spe::take_cache_headers(f);
    CHECK(h.cache_control() == "max-age=60, public");
    CHECK(h.x_cache() == "MISS from collector, HIT from squid");
    CHECK(h.reply_to() == "abc-1");
    CHECK(h.set_cookie);
    CHECK(h.age() == "3");
    CHECK_FALSE(h.expires());
    // Every field's name, known to Beast or not.
    CHECK(h.field_names == spe::FieldNameSet::of("cache-control x-cache x-spe-reply-to set-cookie age"));
}

TEST_CASE("every value of a judged field is kept, however many, whatever comes between them") {
    // Beast's fields hold repeats together and the proxy reply parser in arrival order: the same
    // values either way (tests/unit/test_proxy_reply_parser.cpp).
    boost::beast::http::fields f;
    std::string ages;
    for (int i = 0; i < 40; ++i) {
        f.insert("Age", std::to_string(i));
        f.insert("X-Cache", "HIT");
        ages += (i ? ", " : "") + std::to_string(i);
    }
    const auto h = spe::take_cache_headers(f);
    CHECK(h.age() == ages);
    CHECK(h.x_cache()->size() == 40 * 5 - 2);
}

TEST_CASE("the reply's field names are a set, asked without regard to case") {
    boost::beast::http::fields f;
    f.insert("ETag", "\"a\"");
    f.insert("X-Custom", "1");
    f.insert("Content-Type", "text/plain");
    f.insert("X-CUSTOM", "2");
    f.insert("ETAG", "\"b\"");
    f.insert("x-other", "3");
    f.insert("content-type", "text/html");
    const auto names = spe::take_cache_headers(f).field_names;
    CHECK(names == spe::FieldNameSet::of("etag x-custom content-type x-other"));
    CHECK(names == spe::FieldNameSet::of("X-Other ETAG x-custom Content-Type x-other etag"));
    for (auto name : {"etag", "ETag", "X-CUSTOM", "x-custom", "content-type", "X-Other"})
        CHECK(names.contains(name));
    for (auto name : {"x-cust", "content", "x-other2", "age", "", "x-custom x-other"})
        CHECK_FALSE(names.contains(name));
    CHECK(spe::take_cache_headers(boost::beast::http::fields{}).field_names.empty());
    CHECK_FALSE(names.empty());
}

TEST_CASE("a name inside another name, or at the end of one, is a name of its own") {
    spe::FieldNameSet names;
    for (auto name : {"X-Custom-Long", "x-cust", "Custom-Long", "X-CUSTOM", "custom-long", "x-cust", "Long"})
        names.add(boost::beast::http::field::unknown, name);
    CHECK(names.names() == "x-custom-long x-cust custom-long x-custom long");
    CHECK(names == spe::FieldNameSet::of("long x-custom custom-long x-cust x-custom-long"));
    const std::string very_long(100, 'X');  // longer than names are lowercased on the stack
    names.add(boost::beast::http::field::unknown, very_long);
    names.add(boost::beast::http::field::unknown, std::string(100, 'x'));
    CHECK(names.names() == "x-custom-long x-cust custom-long x-custom long " + std::string(100, 'x'));
    CHECK(names.contains(very_long));
}

TEST_CASE("judged fields share one buffer; a value repeated after another field is joined whole") {
    spe::CacheHeaders h;
    h.set(spe::CacheField::cache_control, "max-age=60");
    h.set(spe::CacheField::age, "3");
    h.append(spe::CacheField::cache_control, "public");
    h.append(spe::CacheField::age, "4");
    CHECK(h.cache_control() == "max-age=60, public");
    CHECK(h.age() == "3, 4");
    h.clear(spe::CacheField::age);
    CHECK_FALSE(h.age());
    h.set(spe::CacheField::etag, "");
    CHECK(h.etag() == "");  // present but empty is not absent
    const auto copy = h;
    CHECK(copy.cache_control() == "max-age=60, public");

    // Filled at once from a reply's values in arrival order, repeats adjacent or not.
    using V = std::pair<spe::CacheField, std::string_view>;
    spe::CacheHeaders all;
    const std::array<V, 5> values = {V{spe::CacheField::cache_control, "max-age=60"},
                                     V{spe::CacheField::cache_control, "public"}, V{spe::CacheField::age, "3"},
                                     V{spe::CacheField::cache_control, "s-maxage=5"},
                                     V{spe::CacheField::etag, "\"e\""}};
    all.assign(values);
    CHECK(all.cache_control() == "max-age=60, public, s-maxage=5");
    CHECK(all.age() == "3");
    CHECK(all.etag() == "\"e\"");
    CHECK_FALSE(all.vary());
}

TEST_CASE("a request's cache fields are read in one pass; credentials only as present") {
    const auto r = spe::request_facts("GET", "u",
                                      "GET u HTTP/1.1\r\nHost: o\r\nPragma: no-cache\r\nAuthorization: Basic eDp5\r\n"
                                      "Accept-Language: de\r\naccept-language: en\r\nCookie: s=1\r\n\r\n");
    CHECK(r.pragma_no_cache);
    CHECK(r.no_cache());
    CHECK(r.authorization);
    using F = std::vector<std::pair<std::string, std::string>>;
    CHECK(r.fields == F{{"pragma", "no-cache"},
                        {"accept-language", "de, en"},
                        {"authorization", "(present)"},
                        {"cookie", "(present)"}});
}

TEST_CASE("credentials and cookies are read as the keyed digest of their normalized value") {
    const auto& secrets = spe::process_secret_digest();
    const auto r = spe::request_facts("GET", "u",
                                      "GET u HTTP/1.1\r\nAuthorization: Bearer SECRETTOKEN456\r\n"
                                      "Proxy-Authorization: Basic eDp5\r\nCookie: s=1 ,  T=2\r\nCookie: u=3\r\n\r\n");
    const auto token = secrets.digest("bearer secrettoken456");
    CHECK(spe::request_field(r, "authorization") == token);
    CHECK(spe::selecting_value(r, "authorization") == token);  // the same digest either way
    CHECK(spe::request_field(r, "proxy-authorization") == secrets.digest("basic edp5"));
    CHECK(spe::selecting_value(r, "cookie") == secrets.digest("s=1,t=2,u=3"));  // repeated fields joined, normalized
    CHECK_FALSE(spe::request_field(r, "set-cookie"));
    CHECK(spe::vary_values(r, {"cookie", "authorization"}) ==
          spe::VaryValues{{"cookie", secrets.digest("s=1,t=2,u=3")}, {"authorization", token}});

    // A variant stored for one token, reused for another: the reason names both by digest.
    auto f = fetch("public, max-age=600");
    f.headers.set(spe::CacheField::vary, "Authorization");
    const spe::StoredFor stored{.authorization = true, .vary = spe::vary_values(r, {"authorization"})};
    const auto other = spe::request_facts("GET", "http://o/x", "GET u HTTP/1.1\r\nAuthorization: Bearer OTHER\r\n\r\n");
    const spe::ReuseQuestion q{f, other, &stored, kFetchedAt + 1, kFetchedAt + 1, {}, {}, {}};
    const auto found = spe::reuse_barriers(q, nullptr);
    REQUIRE(found.size() == 1);
    CHECK(found[0].rule == "vary");
    CHECK(found[0].reason == "the stored variant was selected by authorization: '" + token + "', this request has '" +
                                 secrets.digest("bearer other") + "'");
    const spe::ReuseQuestion same{f, r, &stored, kFetchedAt + 1, kFetchedAt + 1, {}, {}, {}};
    CHECK(spe::reuse_barriers(same, nullptr).empty());
}

TEST_CASE("a copy that was never fresh is stale however soon it is reused; the slack is for fresh ones") {
    auto at_its_lifetime = fetch("max-age=3600");  // Age = max-age on arrival: never fresh (RFC 9111 4.2)
    at_its_lifetime.headers.set(spe::CacheField::age, "3600");
    CHECK(barriers(at_its_lifetime, kRequest, 0.2) == V{"stale"});
    CHECK(barriers(fetch("max-age=0"), kRequest, 0.15) == V{"stale"});
    auto expires_zero = fetch("");
    expires_zero.headers.set(spe::CacheField::expires, "0");  // invalid: already expired (5.3)
    CHECK(barriers(expires_zero, kRequest, 0.3) == V{"stale"});
    auto expires_at_date = fetch("");
    expires_at_date.headers.set(spe::CacheField::expires, http_date(kFetchedAt));  // not after Date
    CHECK(barriers(expires_at_date, kRequest, 0.2) == V{"stale"});
    auto must_revalidate = fetch("max-age=0, must-revalidate");
    CHECK(barriers(must_revalidate, kRequest, 0.2) == V{"must-revalidate"});
    // Fresh on arrival (one second left): the rounding slack still applies to it.
    auto one_second_left = fetch("max-age=10");
    one_second_left.headers.set(spe::CacheField::age, "9");
    CHECK(barriers(one_second_left, kRequest, 2).empty());
    CHECK(barriers(one_second_left, kRequest, 3) == V{"stale"});
    // Validated by the origin during this request: no reuse of a stale copy.
    CHECK(barriers(fetch("max-age=0"), kRequest, 5, kFetchedAt + 5).empty());
}

TEST_CASE("HTTP dates exactly as RFC 9110 5.6.7, matched case-insensitively as RFC 9111 4.2 asks") {
    CHECK_FALSE(spe::parse_http_date("Thu, 18  Aug  2050 02:01:18 GMT"));  // double spaces
    CHECK_FALSE(spe::parse_http_date("Thu, 18 Aug 2050 2:01:18 GMT"));     // one-digit hour
    CHECK_FALSE(spe::parse_http_date("Thu, 8 Aug 2050 02:01:18 GMT"));     // one-digit day
    CHECK_FALSE(spe::parse_http_date("Thu,  18 Aug 2050 02:01:18 GMT"));
    CHECK_FALSE(spe::parse_http_date("Thu, 18 Aug 2050 02:01:18 GMT "));
    CHECK_FALSE(spe::parse_http_date("Xyz, 18 Aug 2050 02:01:18 GMT"));  // no such day-name
    CHECK_FALSE(spe::parse_http_date("Thu, 31 Feb 2050 02:01:18 GMT"));  // no such day (RFC 5322 3.3)
    CHECK_FALSE(spe::parse_http_date("Thu, 18 Aug 2050 02:01:18 +0000"));
    CHECK_FALSE(spe::parse_http_date("Sunday, 06-Nov-94 8:49:37 GMT"));
    CHECK_FALSE(spe::parse_http_date("Sun, 06-Nov-94 08:49:37 GMT"));  // rfc850 needs the long day-name
    CHECK_FALSE(spe::parse_http_date("Sun Nov 6 08:49:37 1994"));      // asctime's day: SP DIGIT or 2DIGIT
    CHECK_FALSE(spe::parse_http_date("Sun Nov  6 8:49:37 1994"));
    CHECK_FALSE(spe::parse_http_date("Sun Nov  6 08:49:37 1994 GMT"));
    CHECK_FALSE(spe::parse_http_date(""));
    CHECK(spe::parse_http_date("Sun Nov 16 08:49:37 1994") == 784111777 + 10 * 86400);
    CHECK(spe::parse_http_date("Sun, 06 Nov 1994 08:49:37 gMT") == 784111777);
    CHECK(spe::parse_http_date("SUN, 06 NOV 1994 08:49:37 GMT") == 784111777);
    CHECK(spe::parse_http_date("sunday, 06-nov-94 08:49:37 gmt") == 784111777);
    CHECK(spe::parse_http_date("sun nov  6 08:49:37 1994") == 784111777);
    // rfc850's two-digit year: more than 50 years ahead means the past century (RFC 9110 5.6.7).
    CHECK(spe::parse_http_date("Friday, 01-Jan-99 00:00:00 GMT") == 915148800);   // 1999
    CHECK(spe::parse_http_date("Sunday, 01-Jan-40 00:00:00 GMT") == 2208988800);  // 2040
    // An Expires that is no date is already expired; a gMT one is a date (no violation to reuse).
    auto lenient = fetch("");
    lenient.headers.set(spe::CacheField::expires, "Thu, 18  Aug  2050 02:01:18 GMT");
    CHECK(barriers(lenient, kRequest, 5) == V{"stale"});
    auto lower = fetch("");
    lower.headers.set(spe::CacheField::expires, "Thu, 18 Aug 2050 02:01:18 gMT");
    CHECK(barriers(lower, kRequest, 5).empty());
}

TEST_CASE("an invalid max-age or s-maxage is invalid freshness information, stale (RFC 9111 4.2.1)") {
    // No delta-seconds (1.2.2): the reply has no valid max-age. 4.2.1 encourages caches to consider such a reply
    // stale; one reused without validation is named, whatever else (heuristics, Expires) would keep it fresh.
    for (const char* cc : {"max-age='3600'", "max-age=3600s", "max-age=-1", "max-age=", "max-age", "max-age=abc",
                           "max-age=1.5", "s-maxage='60'"}) {
        INFO(cc);
        CHECK(barriers(fetch(cc), kRequest, 5) == V{"invalid-freshness"});
        CHECK(barriers(fetch(cc), kRequest, 0.1) == V{"invalid-freshness"});  // never fresh: no slack
    }
    // The quoted-string form is valid (5.2: recipients accept it).
    CHECK(barriers(fetch("max-age=\"3600\""), kRequest, 5).empty());
    auto with_expires = fetch("max-age='3600'");
    with_expires.headers.set(spe::CacheField::expires, http_date(kFetchedAt + 100));
    CHECK(barriers(with_expires, kRequest, 50) == V{"invalid-freshness"});
    // A valid s-maxage decides for a shared cache: the max-age it overrides does not count. An invalid
    // s-maxage is invalid freshness information however valid the max-age.
    CHECK(barriers(fetch("s-maxage=600, max-age='3600'"), kRequest, 5).empty());
    CHECK(barriers(fetch("s-maxage=x, max-age=600"), kRequest, 5) == V{"invalid-freshness"});
    // Named as what it is, whatever else forbids serving it stale.
    CHECK(barriers(fetch("max-age='3600', must-revalidate"), kRequest, 5) == V{"invalid-freshness"});
    // The first occurrence is the one that counts (4.2.1): invalid first is invalid, whatever follows.
    CHECK(barriers(fetch("max-age=x, max-age=600"), kRequest, 5) == V{"invalid-freshness"});
    // Validated during the request: nothing was reused. The client allowed a stale copy: no violation.
    CHECK(barriers(fetch("max-age=abc"), kRequest, 5, kFetchedAt + 5).empty());
    CHECK(barriers(fetch("max-age='3600'"), "GET http://o/x HTTP/1.1\r\nCache-Control: max-stale\r\n\r\n", 5).empty());
}

TEST_CASE("repeated freshness information is an advisory where RFC 9111 4.2.1 leaves a choice") {
    // Repeated: judged by the first occurrence; reusing it is an advisory.
    CHECK(barriers(fetch("max-age=600, max-age=5"), kRequest, 20) == V{"advisory:duplicate-freshness"});
    CHECK(barriers(fetch("max-age=600, max-age=x"), kRequest, 20) == V{"advisory:duplicate-freshness"});
    // Stale by the first, fresh by a later one: 4.2.1's lowercase "should" leaves it to the cache, an advisory;
    // stale by every value given, a violation.
    CHECK(barriers(fetch("max-age=5, max-age=600"), kRequest, 20) == V{"advisory:duplicate-freshness"});
    CHECK(barriers(fetch("max-age=5, max-age=10"), kRequest, 20) == V{"stale"});
    auto two_expires = fetch("");
    two_expires.headers.set(spe::CacheField::expires, http_date(kFetchedAt + 100) + ", " + http_date(kFetchedAt + 1));
    CHECK(barriers(two_expires, kRequest, 20) == V{"advisory:duplicate-freshness"});
    CHECK(barriers(two_expires, kRequest, 150) == V{"stale"});
    const auto cc = spe::parse_cache_control("max-age=60, s-maxage=x, max-age=5");
    CHECK(cc.max_age == 60);
    CHECK_FALSE(cc.s_maxage);
    CHECK(cc.s_maxage_invalid);
    CHECK_FALSE(cc.max_age_invalid);  // the first max-age is valid
    CHECK(cc.freshness_repeated);
}

TEST_CASE("a 304 to If-None-Match is judged by it alone (RFC 9110 13.2.2), named apart") {
    CacheHeaders reply;
    reply.set(spe::CacheField::etag, "\"v2\"");
    reply.set(spe::CacheField::last_modified, "Sun, 06 Nov 1994 08:49:37 GMT");
    // If-Modified-Since alone would allow the 304; If-None-Match does not match and takes precedence.
    auto both = spe::request_facts(
        "GET", "u",
        "GET u HTTP/1.1\r\nIf-None-Match: \"v1\"\r\nIf-Modified-Since: Mon, 07 Nov 1994 08:49:37 GMT\r\n\r\n");
    const auto f = spe::not_modified_finding(both, reply, nullptr);
    REQUIRE(f);
    CHECK(f->rule == "validator-precedence");
    CHECK(f->section == "9110 13.2.2");
    auto inm_only = spe::request_facts("GET", "u", "GET u HTTP/1.1\r\nIf-None-Match: \"v1\"\r\n\r\n");
    CHECK(spe::not_modified_finding(inm_only, reply, nullptr)->rule == "not-modified");
}

TEST_CASE("a 200 where If-None-Match matched is If-Modified-Since judged first (RFC 9110 13.2.2)") {
    CacheHeaders reply;
    reply.set(spe::CacheField::etag, "\"v1\"");
    reply.set(spe::CacheField::last_modified, "Sun, 06 Nov 1994 08:49:37 GMT");
    auto both = spe::request_facts("GET", "u",
                                   "GET u HTTP/1.1\r\nIf-None-Match: \"v0\", W/\"v1\"\r\nIf-Modified-Since: Sat, 05 "
                                   "Nov 1994 08:49:37 GMT\r\n\r\n");
    const auto f = spe::full_reply_precedence_finding(both, reply);
    REQUIRE(f);
    CHECK(f->rule == "validator-precedence");
    // If-None-Match does not match: the 200 is right whatever the date says.
    auto other = spe::request_facts(
        "GET", "u",
        "GET u HTTP/1.1\r\nIf-None-Match: \"v2\"\r\nIf-Modified-Since: Sat, 05 Nov 1994 08:49:37 GMT\r\n\r\n");
    CHECK_FALSE(spe::full_reply_precedence_finding(other, reply));
    // No If-Modified-Since: nothing to put first.
    auto inm_only = spe::request_facts("GET", "u", "GET u HTTP/1.1\r\nIf-None-Match: \"v1\"\r\n\r\n");
    CHECK_FALSE(spe::full_reply_precedence_finding(inm_only, reply));
}

TEST_CASE("header-update compares the fields by meaning: a reordering is no change, and served as updated") {
    CacheHeaders stored, updated, served;
    stored.set(spe::CacheField::cache_control, "public, max-age=60");
    stored.set(spe::CacheField::vary, "Accept-Encoding, Cookie");
    // The 304 sent the same directives and names in another order and case: nothing to update.
    updated.set(spe::CacheField::cache_control, "max-age=60, Public");
    updated.set(spe::CacheField::vary, "cookie, accept-encoding");
    served = stored;
    spe::ParentStamp parent;  // the parent's 304 during this request carried both fields
    parent.time = 1;
    parent.fields = "cache-control vary";
    CHECK_FALSE(spe::header_update_finding(stored, updated, served, &parent));
    // A real change served with its stored value is the finding; served reordered, it was updated.
    updated.set(spe::CacheField::cache_control, "max-age=120, public");
    REQUIRE(spe::header_update_finding(stored, updated, served, &parent));
    served.set(spe::CacheField::cache_control, "public,max-age=120");
    CHECK_FALSE(spe::header_update_finding(stored, updated, served, &parent));
    // The stored directives reordered are the stored value still.
    served.set(spe::CacheField::cache_control, "max-age=60,public");
    CHECK(spe::header_update_finding(stored, updated, served, &parent));
}
