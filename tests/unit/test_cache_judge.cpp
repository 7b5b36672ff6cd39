// The cache-rule judge over whole records: provenance, reuse and its state across requests.
#include "cache_judge.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

namespace {

constexpr double kT0 = 1'700'000'000.0;

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

spe::RequestRecord record(std::uint64_t id, double ts, spe::Measure ref, spe::Measure proxy) {
    spe::RequestRecord r;
    r.id = id;
    r.ts = ts;
    r.method = "GET";
    r.url = "http://o/x";
    r.tag = fmt::format("tag-{}", id);
    r.collector = std::move(ref);
    spe::ProxyResult p;
    p.name = "p";
    p.measure = std::move(proxy);
    p.sent_at = ts + 0.01;
    r.proxies.push_back(std::move(p));
    return r;
}

const std::string kRequest = "GET http://o/x HTTP/1.1\r\nHost: o\r\n\r\n";

std::string stamp(int serial, double t) {
    return fmt::format("65f1-1c2.{}; t={:.3f}", serial, t);
}

}  // namespace

TEST_CASE("a proxy's copy naming an earlier request is a reuse, judged by the first fetch's rules") {
    spe::CacheJudge judge({"p"});
    auto first = record(1, kT0, reply(stamp(1, kT0 + 0.001), "no-store", "tag-1"),
                        reply(stamp(1, kT0 + 0.001), "no-store", "tag-1"));
    judge.judge(first, kRequest);
    CHECK_FALSE(first.collector.cache->reused);
    CHECK_FALSE(first.proxies[0].measure.cache->reused);
    CHECK(first.proxies[0].measure.cache->provenance == "origin");

    // The Collector fetches again (no-store); the proxy serves its own copy of fetch 1.
    auto second = record(2, kT0 + 5, reply(stamp(2, kT0 + 5.001), "no-store", "tag-2"),
                         reply(stamp(1, kT0 + 0.001), "no-store", "tag-1"));
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
    auto first = record(1, kT0, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(first, kRequest);
    auto second = record(2, kT0 + 5, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-2"),
                         reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-2"));
    judge.judge(second, kRequest);
    CHECK(second.collector.cache->reused);  // the Collector's own hit
    CHECK_FALSE(second.proxies[0].measure.cache->reused);
    // It held a fresh copy (it passed fetch 1 on before) and forwarded: a missed hit.
    CHECK(second.proxies[0].measure.cache->conservative == "passed on: fresh copy");
}

TEST_CASE("replies without a stamp, and stamps that are not the Collector's, are named") {
    spe::CacheJudge judge({"p"});
    auto r = record(1, kT0, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"), reply("", "", ""));
    r.proxies[0].measure.fetch.reset();
    judge.judge(r, kRequest);
    CHECK(r.proxies[0].measure.cache->provenance == "none");

    auto forged = record(2, kT0 + 1, reply(stamp(2, kT0 + 1.001), "max-age=600", "tag-2"),
                         reply("ffff-1.9; t=1700000001.000", "max-age=600", "tag-2"));
    judge.judge(forged, kRequest);
    CHECK(forged.proxies[0].measure.cache->provenance == "corrupt");
    auto garbage = record(3, kT0 + 2, reply(stamp(3, kT0 + 2.001), "max-age=600", "tag-3"),
                          reply("not a stamp", "max-age=600", "tag-3"));
    judge.judge(garbage, kRequest);
    CHECK(garbage.proxies[0].measure.cache->provenance == "corrupt");
    auto future = record(4, kT0 + 3, reply(stamp(4, kT0 + 3.001), "max-age=600", "tag-4"),
                         reply(stamp(5, kT0 + 3600), "max-age=600", "tag-4"));
    judge.judge(future, kRequest);
    CHECK(future.proxies[0].measure.cache->provenance == "corrupt");
}

TEST_CASE("an unsafe request's success invalidates the cache's earlier copies") {
    spe::CacheJudge judge({"p"});
    auto first = record(1, kT0, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(first, kRequest);
    judge.note_unsafe(0, "http://o/x", 200, kT0 + 2);
    auto after = record(3, kT0 + 4, reply(stamp(3, kT0 + 4.001), "max-age=600", "tag-3"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    after.proxies[0].measure.cache_headers.set(spe::CacheField::age, "4");
    judge.judge(after, kRequest);
    const auto& v = *after.proxies[0].measure.cache;
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "invalidation");
}

TEST_CASE("request rules follow what each cache was asked when it received the copy") {
    // Fetch 1 reaches the proxy first for a no-store request, then again for a plain one
    // (the Collector stored it from another proxy's forward): the proxy may keep and reuse it.
    spe::CacheJudge judge({"p"});
    const std::string no_store = "GET http://o/x HTTP/1.1\r\nCache-Control: no-store\r\n\r\n";
    auto first = record(1, kT0, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    judge.judge(first, no_store);
    auto reuse_after_no_store = record(2, kT0 + 1, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-2"),
                                       reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    reuse_after_no_store.proxies[0].measure.cache_headers.set(spe::CacheField::age, "1");
    judge.judge(reuse_after_no_store, kRequest);
    // Request directives are advisory (RFC 9111 5.2.1): reported as such, not as violations.
    CHECK(reuse_after_no_store.proxies[0].measure.cache->violations.empty());
    REQUIRE(reuse_after_no_store.proxies[0].measure.cache->advisories.size() == 1);
    CHECK(reuse_after_no_store.proxies[0].measure.cache->advisories[0].rule == "request-no-store");

    auto plain = record(3, kT0 + 2, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-3"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-3"));
    judge.judge(plain, kRequest);
    auto reuse = record(4, kT0 + 3, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-4"),
                        reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-3"));
    reuse.proxies[0].measure.cache_headers.set(spe::CacheField::age, "3");
    judge.judge(reuse, kRequest);
    CHECK(reuse.proxies[0].measure.cache->reused);
    CHECK(reuse.proxies[0].measure.cache->violations.empty());
    CHECK(reuse.proxies[0].measure.cache->advisories.empty());
}

TEST_CASE("a body after a reply to HEAD is the head-body rule") {
    spe::CacheJudge judge({"p"});
    auto r = record(1, kT0, reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"),
                    reply(stamp(1, kT0 + 0.001), "max-age=600", "tag-1"));
    r.method = "HEAD";
    r.proxies[0].measure.error = spe::LegError::extra_data;
    judge.judge(r, "HEAD http://o/x HTTP/1.1\r\n\r\n");
    const auto& v = *r.proxies[0].measure.cache;
    REQUIRE(v.violations.size() == 1);
    CHECK(v.violations[0].rule == "head-body");
    CHECK(r.collector.cache->violations.empty());
}
