// The cache-rule judge over whole records: provenance, reuse and its state across requests.
#include "http/secret_digest.hpp"
#include "judge/cache_judge.hpp"
#include "judge_records.hpp"
#include "log/record_json.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace {

using spe::test::fetch_stamp;
using spe::test::kRequest;
using spe::test::kT0;
using spe::test::one_proxy_record;

spe::Measure reply(const std::string& stamp, const std::string& cache_control, const std::string& reply_to) {
    spe::Measure m;
    m.status = 200;
    m.ttfb_us = 1000;
    m.fetch = stamp;
    m.cache_headers.set(spe::CacheField::cache_control, cache_control);
    if (!reply_to.empty()) m.cache_headers.set(spe::CacheField::reply_to, reply_to);
    m.cache_headers.set(spe::CacheField::age, "0");
    return m;
}

/// Request `id` at `at`: the Collector and the proxy both serve fetch 1 (max-age=600), each reply naming `tag`.
spe::RequestRecord fresh_copy_request(std::uint64_t id, double at, const std::string& tag) {
    return one_proxy_record(id, at, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", tag),
                            reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", tag));
}

}  // namespace

TEST_CASE("a proxy's copy naming an earlier request is a reuse, judged by the first fetch's rules") {
    spe::CacheJudge judge({"p"});
    auto first = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "no-store", "tag-1"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "no-store", "tag-1"));
    judge.judge(first, kRequest);
    CHECK_FALSE(first.collector.cache->reused);
    CHECK_FALSE(first.proxies[0].measure.cache->reused);
    CHECK(first.proxies[0].measure.cache->provenance == spe::Provenance::origin);

    // The Collector fetches again (no-store); the proxy serves its own copy of fetch 1.
    auto second = one_proxy_record(2, kT0 + 5, reply(fetch_stamp(2, kT0 + 5.001), "no-store", "tag-2"),
                                   reply(fetch_stamp(1, kT0 + 0.001), "no-store", "tag-1"));
    second.proxies[0].measure.cache_headers.set(spe::CacheField::age, "5");
    judge.judge(second, kRequest);
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.reused);
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "no-store");
    CHECK_FALSE(v.evidence_served.empty());
}

TEST_CASE("the same fetch from the Collector's store is no reuse by the proxy when it names this request") {
    spe::CacheJudge judge({"p"});
    auto first = fresh_copy_request(1, kT0, "tag-1");
    judge.judge(first, kRequest);
    auto second = fresh_copy_request(2, kT0 + 5, "tag-2");
    judge.judge(second, kRequest);
    CHECK(second.collector.cache->reused);  // the Collector's own hit
    CHECK_FALSE(second.proxies[0].measure.cache->reused);
    // It held a fresh copy (it passed fetch 1 on before) and forwarded: a missed hit.
    CHECK(second.proxies[0].measure.cache->conservative == "passed on: fresh copy");
}

TEST_CASE("a leg that overtook an earlier request for its URL is not held to what the cache kept before") {
    // As above, but the proxy's leg of request 2 went before the proxy had answered an earlier request of the
    // client for the same URL (--order-wait gave the order up): the copy the judge last saw it pass on need not
    // be what the cache held when this leg arrived, so no missed hit is claimed, and the verdict says why.
    spe::CacheJudge judge({"p"});
    auto first = fresh_copy_request(1, kT0, "tag-1");
    judge.judge(first, kRequest);
    auto second = fresh_copy_request(2, kT0 + 5, "tag-2");
    second.proxies[0].overtook = {1};
    second.proxies[0].overtook_related = true;
    judge.judge(second, kRequest);
    const auto& v = *second.proxies[0].measure.cache;
    CHECK(v.conservative.empty());
    CHECK(v.unjudged.starts_with("overtook:"));
    CHECK(v.provenance == spe::Provenance::origin);  // the rest is judged as ever
    // Overtaking a request for another URL changes nothing the cache gives this one: judged in full.
    auto third = fresh_copy_request(3, kT0 + 6, "tag-3");
    third.proxies[0].overtook = {2};
    judge.judge(third, kRequest);
    CHECK(third.proxies[0].measure.cache->conservative == "passed on: fresh copy");
    CHECK(third.proxies[0].measure.cache->unjudged.empty());
}

TEST_CASE("replies without a stamp, and stamps that are not the Collector's, are named") {
    spe::CacheJudge judge({"p"});
    auto r = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"), reply("", "", ""));
    r.proxies[0].measure.fetch.reset();
    judge.judge(r, kRequest);
    CHECK(r.proxies[0].measure.cache->provenance == spe::Provenance::none);
    CHECK(r.proxies[0].measure.cache->unjudged == "no X-SPE-Fetch stamp: not from the origin");
    CHECK(r.collector.cache->unjudged.empty());

    auto forged = one_proxy_record(2, kT0 + 1, reply(fetch_stamp(2, kT0 + 1.001), "max-age=600", "tag-2"),
                                   reply("ffff-1.9; t=1700000001.000", "max-age=600", "tag-2"));
    judge.judge(forged, kRequest);
    CHECK(forged.proxies[0].measure.cache->provenance == spe::Provenance::corrupt);
    CHECK(forged.proxies[0].measure.cache->unjudged == "corrupt stamp: names Collector ffff-1, not this run's");
    auto garbage = one_proxy_record(3, kT0 + 2, reply(fetch_stamp(3, kT0 + 2.001), "max-age=600", "tag-3"),
                                    reply("not a stamp", "max-age=600", "tag-3"));
    judge.judge(garbage, kRequest);
    CHECK(garbage.proxies[0].measure.cache->provenance == spe::Provenance::corrupt);
    CHECK(garbage.proxies[0].measure.cache->unjudged == "corrupt stamp: X-SPE-Fetch does not parse");
    auto future = one_proxy_record(4, kT0 + 3, reply(fetch_stamp(4, kT0 + 3.001), "max-age=600", "tag-4"),
                                   reply(fetch_stamp(5, kT0 + 3600), "max-age=600", "tag-4"));
    judge.judge(future, kRequest);
    CHECK(future.proxies[0].measure.cache->provenance == spe::Provenance::corrupt);
    CHECK(future.proxies[0].measure.cache->unjudged.starts_with("corrupt stamp: fetched 3597."));
}

TEST_CASE("an unsafe request's success invalidates the cache's earlier copies") {
    for (unsigned status : {200U, 204U}) {  // any 2xx (RFC 9111 4.4): a 204 to M-SEARCH as a 200 to PUT
        spe::CacheJudge judge({"p"});
        auto first = fresh_copy_request(1, kT0, "tag-1");
        judge.judge(first, kRequest);
        judge.note_unsafe(0, "http://o/x", status, kT0 + 2);
        auto after = one_proxy_record(3, kT0 + 4, reply(fetch_stamp(3, kT0 + 4.001), "max-age=600", "tag-3"),
                                      reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
        after.proxies[0].measure.cache_headers.set(spe::CacheField::age, "4");
        judge.judge(after, kRequest);
        const auto& v = *after.proxies[0].measure.cache;
        REQUIRE(v.violations.size() == 1);
        CHECK(v.violations[0].rule == "invalidation");
    }
}

TEST_CASE("the verdict keeps the length the validating 304 carried, for a repro case to send again") {
    spe::CacheJudge judge({"p"});
    auto first = fresh_copy_request(1, kT0, "tag-1");
    judge.judge(first, kRequest);
    auto revalidated = fresh_copy_request(2, kT0 + 5, "tag-2");
    revalidated.collector.cache_headers.set(spe::CacheField::validated, fetch_stamp(2, kT0 + 5.001) + "; length=0");
    judge.judge(revalidated, kRequest);
    const auto& v = *revalidated.collector.cache;
    CHECK(v.validated_at == Approx(kT0 + 5.001));
    CHECK(v.validated_length == 0U);
    CHECK_FALSE(first.collector.cache->validated_length);  // no 304, no length
}

TEST_CASE("an unknown method is unsafe: the fan-out notes its success as an invalidation (RFC 9110 9.2.1)") {
    // A cache cannot know what an extension method does, so RFC 9111 4.4 applies to any method not defined as
    // safe: Traffic Server keeping a copy after a 2xx to M-SEARCH is an invalidation failure.
    for (const auto* method : {"M-SEARCH", "PURGE", "PROPPATCH", "PATCH", "DELETE", "POST", "PUT"})
        CHECK(spe::is_unsafe_method(method));
    for (const auto* method : {"GET", "HEAD", "OPTIONS", "TRACE"})
        CHECK_FALSE(spe::is_unsafe_method(method));
    CHECK(spe::is_unsafe_method("get"));  // methods are case-sensitive (RFC 9110 9.1): "get" is not GET
}

TEST_CASE("request rules follow what each cache was asked when it received the copy") {
    // Fetch 1 reaches the proxy first for a no-store request, then again for a plain one
    // (the Collector stored it from another proxy's forward): the proxy may keep and reuse it.
    spe::CacheJudge judge({"p"});
    const std::string no_store = "GET http://o/x HTTP/1.1\r\nCache-Control: no-store\r\n\r\n";
    auto first = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(first, no_store);
    auto reuse_after_no_store = one_proxy_record(2, kT0 + 1, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-2"),
                                                 reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    reuse_after_no_store.proxies[0].measure.cache_headers.set(spe::CacheField::age, "1");
    judge.judge(reuse_after_no_store, kRequest);
    // Request directives are advisory (RFC 9111 5.2.1): reported as such, not as violations.
    CHECK(reuse_after_no_store.proxies[0].measure.cache->violations.empty());
    REQUIRE(reuse_after_no_store.proxies[0].measure.cache->advisories.size() == 1);
    CHECK(reuse_after_no_store.proxies[0].measure.cache->advisories[0].rule == "request-no-store");

    auto plain = one_proxy_record(3, kT0 + 2, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-3"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-3"));
    judge.judge(plain, kRequest);
    auto reuse = one_proxy_record(4, kT0 + 3, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-4"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-3"));
    reuse.proxies[0].measure.cache_headers.set(spe::CacheField::age, "3");
    judge.judge(reuse, kRequest);
    CHECK(reuse.proxies[0].measure.cache->reused);
    CHECK(reuse.proxies[0].measure.cache->violations.empty());
    CHECK(reuse.proxies[0].measure.cache->advisories.empty());
}

TEST_CASE("a body after a reply to HEAD is the head-body rule") {
    spe::CacheJudge judge({"p"});
    auto r = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                              reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    r.method = "HEAD";
    r.proxies[0].measure.error = spe::LegError::extra_data;
    judge.judge(r, "HEAD http://o/x HTTP/1.1\r\n\r\n");
    const auto& v = *r.proxies[0].measure.cache;
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "head-body");
    CHECK(r.collector.cache->violations.empty());
}

TEST_CASE("Vary: Cookie is judged by keyed digests; no cookie value reaches a verdict or the record") {
    spe::CacheJudge judge({"p"});
    const auto& secrets = spe::process_secret_digest();
    auto with_cookie = [](std::string_view cookie) {
        return fmt::format("GET http://o/x HTTP/1.1\r\nHost: o\r\nCookie: {}\r\n\r\n", cookie);
    };
    auto varying = [](spe::Measure m) {
        m.cache_headers.set(spe::CacheField::vary, "Cookie");
        return m;
    };
    auto no_cookie_in = [](const spe::RequestRecord& r) {
        auto line = spe::to_json_line(r, "m1");
        std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
        return line.find("alice") == std::string::npos && line.find("bob") == std::string::npos;
    };
    // Alice's request: the proxy stores her variant.
    auto first = one_proxy_record(1, kT0, varying(reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1")),
                                  varying(reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1")));
    judge.judge(first, with_cookie("session=ALICE"));
    CHECK(no_cookie_in(first));

    // Bob's: the Collector fetches his variant, the proxy serves Alice's.
    auto second = one_proxy_record(2, kT0 + 1, varying(reply(fetch_stamp(2, kT0 + 1.001), "max-age=600", "tag-2")),
                                   varying(reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1")));
    second.proxies[0].measure.cache_headers.set(spe::CacheField::age, "1");
    judge.judge(second, with_cookie("session=BOB"));
    const auto alice = secrets.digest("session=alice");  // of the value as Vary compares it (lowercased)
    const auto bob = secrets.digest("session=bob");
    const auto& v = *second.proxies[0].measure.cache;
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "vary");
    CHECK(v.violations[0].reason ==
          fmt::format("the stored variant was selected by cookie: '{}', this request has '{}'", alice, bob));
    using F = std::pair<std::string, std::string>;
    auto shown = [](const spe::CacheVerdict& verdict, const std::string& name) -> std::optional<std::string> {
        for (const auto& [n, value] : verdict.evidence_request)
            if (n == name) return value;
        return std::nullopt;
    };
    CHECK(shown(v, "cookie") == bob);
    CHECK(shown(v, "stored variant's cookie") == alice);
    CHECK(second.request_headers == std::vector<F>{{"cookie", "(present)"}});
    CHECK(no_cookie_in(second));

    // Alice again, the value written otherwise: her stored variant matches (no vary finding); the copy's
    // understated Age is a violation, whose evidence shows the two cookies as equal digests.
    auto third = one_proxy_record(3, kT0 + 10, varying(reply(fetch_stamp(3, kT0 + 10.001), "max-age=600", "tag-3")),
                                  varying(reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1")));
    judge.judge(third, with_cookie("  session=ALICE  "));
    const auto& again = *third.proxies[0].measure.cache;
    CHECK(again.reused);
    REQUIRE(again.violations.size() == 1);
    CHECK(again.violations[0].rule == "age");
    CHECK(shown(again, "cookie") == alice);
    CHECK(shown(again, "stored variant's cookie") == alice);
    CHECK(no_cookie_in(third));
}

TEST_CASE("Vary: Authorization shows the credentials' digests, not their presence alone") {
    spe::CacheJudge judge({"p"});
    const auto& secrets = spe::process_secret_digest();
    auto with_token = [](std::string_view token) {
        return fmt::format("GET http://o/x HTTP/1.1\r\nHost: o\r\nAuthorization: Bearer {}\r\n\r\n", token);
    };
    auto varying = [](spe::Measure m) {
        m.cache_headers.set(spe::CacheField::vary, "Authorization");
        return m;
    };
    auto first = one_proxy_record(1, kT0, varying(reply(fetch_stamp(1, kT0 + 0.001), "public, max-age=600", "tag-1")),
                                  varying(reply(fetch_stamp(1, kT0 + 0.001), "public, max-age=600", "tag-1")));
    judge.judge(first, with_token("SECRETTOKEN456"));
    auto second =
        one_proxy_record(2, kT0 + 1, varying(reply(fetch_stamp(2, kT0 + 1.001), "public, max-age=600", "tag-2")),
                         varying(reply(fetch_stamp(1, kT0 + 0.001), "public, max-age=600", "tag-1")));
    second.proxies[0].measure.cache_headers.set(spe::CacheField::age, "1");
    judge.judge(second, with_token("OTHERTOKEN789"));
    const auto& v = *second.proxies[0].measure.cache;
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "vary");
    using F = std::vector<std::pair<std::string, std::string>>;
    const F request = {{"method", "GET"},
                       {"authorization", secrets.digest("bearer othertoken789")},
                       {"stored variant's authorization", secrets.digest("bearer secrettoken456")}};
    CHECK(v.evidence_request == request);
    auto line = spe::to_json_line(second, "m1");
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    CHECK(line.find("secrettoken456") == std::string::npos);
    CHECK(line.find("othertoken789") == std::string::npos);
}

namespace {

spe::Measure not_modified(std::optional<std::string> etag, const std::string& reply_to) {
    spe::Measure m;
    m.status = 304;
    m.ttfb_us = 1000;
    if (etag) m.cache_headers.set(spe::CacheField::etag, *etag);
    if (!reply_to.empty()) m.cache_headers.set(spe::CacheField::reply_to, reply_to);
    return m;
}

std::vector<std::string_view> rules(const spe::Measure& m) {
    std::vector<std::string_view> out;
    for (const auto& f : m.cache->violations)
        out.push_back(f.rule);
    return out;
}

using Rules = std::vector<std::string_view>;

}  // namespace

TEST_CASE("a 304 must carry the ETag and Vary the stored reply had (RFC 9110 15.4.5), the Collector's too") {
    spe::CacheJudge judge({"p"});
    auto stored = reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1");
    stored.cache_headers.set(spe::CacheField::etag, "\"v1\"");
    stored.cache_headers.set(spe::CacheField::vary, "Accept-Language");
    auto first = one_proxy_record(1, kT0, stored, stored);
    judge.judge(first, kRequest);
    const std::string conditional = "GET http://o/x HTTP/1.1\r\nIf-None-Match: \"v1\"\r\n\r\n";

    // The proxy answers from its store without the ETag and Vary; the Collector with both.
    auto with_fields = not_modified("\"v1\"", "tag-2");
    with_fields.cache_headers.set(spe::CacheField::vary, "Accept-Language");
    auto second = one_proxy_record(2, kT0 + 1, with_fields, not_modified(std::nullopt, ""));
    judge.judge(second, conditional);
    CHECK(rules(second.collector).empty());
    REQUIRE(rules(second.proxies[0].measure) == Rules{"not-modified-fields"});
    CHECK(second.proxies[0].measure.cache->violations[0].section == "9110 15.4.5");
    CHECK(second.proxies[0].measure.cache->violations[0].reason.find("ETag") != std::string::npos);
    CHECK(second.proxies[0].measure.cache->violations[0].reason.find("Vary") != std::string::npos);

    // The Collector (a Squid 5.7) leaves the ETag out; the proxy relays that 304 (it names this
    // request): the Collector's omission, not the proxy's.
    auto third = one_proxy_record(3, kT0 + 2, not_modified(std::nullopt, "tag-3"), not_modified(std::nullopt, "tag-3"));
    third.collector.cache_headers.set(spe::CacheField::vary, "Accept-Language");
    third.proxies[0].measure.cache_headers.set(spe::CacheField::vary, "Accept-Language");
    judge.judge(third, conditional);
    CHECK(rules(third.collector) == Rules{"not-modified-fields"});
    CHECK(rules(third.proxies[0].measure).empty());
}

TEST_CASE("a reused copy whose body disagrees with its Content-Length is named, with the leg's reason") {
    spe::CacheJudge judge({"p"});
    auto first = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(first, kRequest);
    for (auto error : {spe::LegError::extra_data, spe::LegError::truncated}) {
        auto again = one_proxy_record(2, kT0 + 1, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-2"),
                                      reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
        auto& m = again.proxies[0].measure;
        m.cache_headers.set(spe::CacheField::age, "1");
        m.error = error;
        m.error_detail = "reading the body after 5 bytes: partial message";
        m.bytes = 5;
        judge.judge(again, kRequest);
        REQUIRE(rules(m) == Rules{"framing"});
        CHECK(m.cache->violations[0].reason.find("5 bytes") != std::string::npos);
        CHECK(rules(again.collector).empty());
    }
    // A fetch made for this request with a framing error is the origin's or the leg's, not a stored copy's.
    auto fresh = one_proxy_record(3, kT0 + 2, reply(fetch_stamp(3, kT0 + 2.001), "max-age=600", "tag-3"),
                                  reply(fetch_stamp(3, kT0 + 2.001), "max-age=600", "tag-3"));
    fresh.proxies[0].measure.error = spe::LegError::truncated;
    judge.judge(fresh, kRequest);
    CHECK(rules(fresh.proxies[0].measure).empty());
}

TEST_CASE("a copy revalidated during the request, its Content-Length taken from the 304, is named framing") {
    // Squid 5.7 merges its parent's 304 (whose stamps name this request: no reuse) with Content-Length: 0 into
    // the stored reply and serves the stored body after it: the body is the store's, fetched before the request.
    spe::CacheJudge judge({"p"});
    auto first = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=2", "tag-1"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=2", "tag-1"));
    judge.judge(first, kRequest);
    auto again = one_proxy_record(2, kT0 + 4, reply(fetch_stamp(1, kT0 + 0.001), "max-age=2", "tag-2"),
                                  reply(fetch_stamp(1, kT0 + 0.001), "max-age=2", "tag-2"));
    auto& m = again.proxies[0].measure;
    m.error = spe::LegError::extra_data;
    m.error_detail = "bytes after the reply";
    m.bytes = 0;
    judge.judge(again, kRequest);
    CHECK_FALSE(m.cache->reused);
    CHECK(rules(m) == Rules{"framing"});
}

TEST_CASE("the Collector invalidates when it takes the unsafe request's reply, on the clock of its stamps") {
    // The POST's reply reached the Collector at kT0 + 1.002 (its stamp) and the Multiplier 4 ms later. In
    // between, a proxy's request made the Collector fetch again (kT0 + 1.004): a copy stored after the
    // invalidation, which the client's next GET may reuse.
    spe::CacheJudge judge({"p"});
    auto get = one_proxy_record(1, kT0, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                                reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(get, kRequest);
    auto post = one_proxy_record(2, kT0 + 1, reply(fetch_stamp(2, kT0 + 1.002), "no-store", "tag-2"),
                                 reply(fetch_stamp(2, kT0 + 1.002), "no-store", "tag-2"));
    post.method = "POST";
    post.collector.ttfb_us = 6000;
    judge.note_collector_unsafe(post);
    auto next = one_proxy_record(3, kT0 + 1.010, reply(fetch_stamp(3, kT0 + 1.004), "max-age=600", "tag-3"),
                                 reply(fetch_stamp(3, kT0 + 1.004), "max-age=600", "tag-3"));
    judge.judge(next, kRequest);
    CHECK(next.collector.cache->reused);
    CHECK(next.collector.cache->violations.empty());

    SECTION("a copy it stored before then and reused after is the Collector's fault") {
        auto stale = one_proxy_record(4, kT0 + 1.5, reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-4"),
                                      reply(fetch_stamp(1, kT0 + 0.001), "max-age=600", "tag-4"));
        judge.judge(stale, kRequest);
        REQUIRE(stale.collector.cache->violations.size() == 1);
        CHECK(stale.collector.cache->violations[0].rule == "invalidation");
    }
    SECTION("without a stamp on its reply: when the reply's first byte reached the Multiplier") {
        auto unstamped = post;
        unstamped.collector.fetch.reset();
        judge.note_collector_unsafe(unstamped);
        auto again = one_proxy_record(5, kT0 + 1.5, reply(fetch_stamp(3, kT0 + 1.004), "max-age=600", "tag-5"),
                                      reply(fetch_stamp(3, kT0 + 1.004), "max-age=600", "tag-5"));
        judge.judge(again, kRequest);
        REQUIRE(again.collector.cache->violations.size() == 1);
        CHECK(again.collector.cache->violations[0].rule == "invalidation");
    }
}
