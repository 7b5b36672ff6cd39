// RFC 9110 15.2 on a proxy's leg: interim (1xx) replies dropped, ended on, or hung after.
#include "judge/cache_judge.hpp"
#include "judge/interim_rule.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

namespace {

constexpr double kT0 = 1'700'000'000.0;

std::string stamp(int serial, double t) {
    return fmt::format("65f1-1c2.{}; t={:.3f}", serial, t);
}

spe::Measure final_reply(std::vector<spe::Interim> interim, std::optional<std::string> fetch = std::nullopt) {
    spe::Measure m;
    m.status = 200;
    m.ttfb_us = 1000;
    m.interim = std::move(interim);
    m.fetch = std::move(fetch);
    return m;
}

spe::Measure no_final_reply(std::vector<spe::Interim> interim, spe::LegError error) {
    spe::Measure m;
    m.interim = std::move(interim);
    m.error = error;
    return m;
}

const spe::Measure kWithHints = final_reply({{103, 1000}});

}  // namespace

TEST_CASE("a proxy that forwards its parent's interim replies, then the final one, breaks nothing") {
    auto j = spe::judge_interim(kWithHints, final_reply({{103, 2000}}), {nullptr, true});
    CHECK(j.exercised);
    CHECK_FALSE(j.finding);
}

TEST_CASE("dropping an interim reply its parent relayed for its own request is named") {
    auto j = spe::judge_interim(final_reply({{103, 1000}, {102, 2000}}), final_reply({{102, 2500}}), {nullptr, true});
    REQUIRE(j.finding);
    CHECK(j.finding->rule == "interim");
    CHECK(j.finding->section == "9110 15.2");
    CHECK(j.finding->reason.find("103") != std::string::npos);
}

TEST_CASE("a reply that never went to the origin for this proxy owed no interim reply") {
    auto j = spe::judge_interim(kWithHints, final_reply({}), {nullptr, false});
    CHECK_FALSE(j.exercised);
    CHECK_FALSE(j.finding);
}

TEST_CASE("a reply its parent sent for this request with interim replies owes those (X-SPE-Parent's interim)") {
    // The Collector answered from a copy whose fetch got a 103 (patch 0021 keeps and replays them): the
    // client's own reply was a hit without one, so only the parent's stamp tells what the proxy was given.
    const std::vector<unsigned> sent = {103};
    auto dropped = spe::judge_interim(final_reply({}), final_reply({}), {&sent, false});
    CHECK(dropped.exercised);
    REQUIRE(dropped.finding);
    CHECK(dropped.finding->reason.find("X-SPE-Parent") != std::string::npos);
    auto kept = spe::judge_interim(final_reply({}), final_reply({{103, 1500}}), {&sent, false});
    CHECK(kept.exercised);
    CHECK_FALSE(kept.finding);
}

TEST_CASE("the parent's stamp says an interim reply twice: both are owed") {
    const std::vector<unsigned> sent = {102, 102};
    CHECK(spe::judge_interim(kWithHints, final_reply({{102, 1}}), {&sent, false}).finding);
    CHECK_FALSE(spe::judge_interim(kWithHints, final_reply({{102, 1}, {102, 2}}), {&sent, false}).finding);
}

TEST_CASE("a 100 Continue the proxy did not pass on is not a drop (it may have asked for it itself)") {
    auto j = spe::judge_interim(final_reply({{100, 1000}}), final_reply({}), {nullptr, true});
    CHECK_FALSE(j.finding);
}

TEST_CASE("an interim reply and then no final one is named, from a store or not") {
    SECTION("hung until the deadline") {
        auto j =
            spe::judge_interim(kWithHints, no_final_reply({{102, 3000}}, spe::LegError::timeout), {nullptr, false});
        REQUIRE(j.finding);
        CHECK(j.finding->reason.find("hung after") != std::string::npos);
        CHECK(j.finding->reason.find("102") != std::string::npos);
    }
    SECTION("ended the exchange there: a 103 as the final response") {
        auto j =
            spe::judge_interim(final_reply({}), no_final_reply({{103, 3000}}, spe::LegError::closed), {nullptr, false});
        REQUIRE(j.finding);
        CHECK(j.finding->reason.find("as its final response") != std::string::npos);
    }
    SECTION("not when SPE itself aborted the leg (shutdown)") {
        CHECK_FALSE(spe::judge_interim(kWithHints, no_final_reply({{103, 1}}, spe::LegError::aborted), {nullptr, false})
                        .finding);
    }
    SECTION("not when the Collector's own reply did not end well either") {
        spe::Measure broken;
        broken.error = spe::LegError::timeout;
        CHECK_FALSE(
            spe::judge_interim(broken, no_final_reply({{103, 1}}, spe::LegError::timeout), {nullptr, false}).finding);
    }
}

TEST_CASE("a proxy's own fetch: a later fetch of the same Collector, made after its request left") {
    const auto ref = final_reply({}, stamp(7, kT0 + 0.002));
    CHECK(spe::is_own_fetch(ref, final_reply({}, stamp(8, kT0 + 0.02)), kT0 + 0.01));
    CHECK_FALSE(spe::is_own_fetch(ref, final_reply({}, stamp(7, kT0 + 0.002)), kT0 + 0.01));  // the shared copy
    CHECK_FALSE(spe::is_own_fetch(ref, final_reply({}, stamp(6, kT0 - 9)), kT0 + 0.01));      // an older one
    CHECK_FALSE(spe::is_own_fetch(ref, final_reply({}, "origin-8"), kT0 + 0.01));             // not a stamp
    CHECK_FALSE(spe::is_own_fetch(ref, final_reply({}), kT0 + 0.01));                         // none
}

TEST_CASE("the judge names, per proxy, the interim rule on whole records") {
    spe::CacheJudge judge({"faithful", "drops", "hangs", "reused"});
    spe::RequestRecord r;
    r.id = 1;
    r.ts = kT0;
    r.method = "GET";
    r.url = "http://o/x";
    r.tag = "tag-1";
    r.collector = final_reply({{103, 900}}, stamp(1, kT0 + 0.001));
    const auto leg = [&](std::string name, spe::Measure m) {
        spe::ProxyResult p;
        p.name = std::move(name);
        p.measure = std::move(m);
        p.sent_at = kT0 + 0.01;
        r.proxies.push_back(std::move(p));
    };
    leg("faithful", final_reply({{103, 800}}, stamp(2, kT0 + 0.011)));
    leg("drops", final_reply({}, stamp(3, kT0 + 0.012)));
    leg("hangs", no_final_reply({{103, 700}}, spe::LegError::timeout));
    leg("reused", final_reply({}, stamp(1, kT0 + 0.001)));  // the Collector's shared copy: no interim to forward
    judge.judge(r, "GET http://o/x HTTP/1.1\r\nHost: o\r\n\r\n");
    const auto rules = [&](std::size_t i) {
        std::vector<std::string> out;
        for (const auto& f : r.proxies[i].measure.cache->violations)
            out.emplace_back(f.rule);
        return out;
    };
    CHECK(rules(0).empty());
    CHECK(rules(1) == std::vector<std::string>{"interim"});
    REQUIRE(r.proxies[2].measure.cache);
    CHECK(rules(2) == std::vector<std::string>{"interim"});
    CHECK(r.proxies[2].measure.cache->provenance == spe::Provenance::none);
    CHECK(rules(3).empty());
    const auto& exercised = r.proxies[1].measure.cache->exercised;
    CHECK(std::find(exercised.begin(), exercised.end(), "interim") != exercised.end());
    CHECK(r.collector.cache->violations.empty());
    const auto& evidence = r.proxies[2].measure.cache->evidence_served;
    REQUIRE(evidence.size() == 1);
    CHECK(evidence[0] == std::pair<std::string, std::string>{"interim (as received)", "103 at 0.001 s"});
    CHECK(r.proxies[1].measure.cache->evidence_reference.back().second == "103 at 0.001 s");
    CHECK(r.proxies[1].measure.cache->evidence_served.back().second == "none");
}

TEST_CASE("a proxy that answers nothing, or an error of its own, after its parent's interim replies is named") {
    // The patched Collector (its fetch stamp on the reference) sends a copy's interim replies to every proxy
    // request answered from it: nginx then hangs until the deadline, Varnish answers a 503 of its own.
    const auto ref = final_reply({{103, 1000}}, stamp(1, kT0 + 0.001));
    SECTION("nothing before the deadline") {
        auto j = spe::judge_interim(ref, no_final_reply({}, spe::LegError::timeout), {nullptr, false});
        REQUIRE(j.finding);
        CHECK(j.exercised);
        CHECK(j.finding->reason.find("no final response (timeout)") != std::string::npos);
        CHECK(j.finding->reason.find("103") != std::string::npos);
        CHECK(spe::judged_without_final_reply(ref, no_final_reply({}, spe::LegError::timeout)));
    }
    SECTION("a 503 of its own: no fetch stamp") {
        auto own = final_reply({});
        own.status = 503;
        auto j = spe::judge_interim(ref, own, {nullptr, false});
        REQUIRE(j.finding);
        CHECK(j.finding->reason.find("a 503 of its own where the origin's 200") != std::string::npos);
    }
    SECTION("not a 503 that came from a fetch (the origin's, relayed)") {
        auto relayed = final_reply({}, stamp(2, kT0 + 0.02));
        relayed.status = 503;
        CHECK_FALSE(spe::judge_interim(ref, relayed, {nullptr, false}).finding);
    }
    SECTION("not a proxy that could not be reached, nor a leg SPE did not send") {
        for (const auto error : {spe::LegError::refused, spe::LegError::busy, spe::LegError::aborted}) {
            CHECK_FALSE(spe::judge_interim(ref, no_final_reply({}, error), {nullptr, false}).finding);
            CHECK_FALSE(spe::judged_without_final_reply(ref, no_final_reply({}, error)));
        }
    }
    SECTION("not behind a stock Collector (no fetch stamp: it sends a proxy no interim reply from its store)") {
        const auto stock = final_reply({{103, 1000}});
        CHECK_FALSE(spe::judge_interim(stock, no_final_reply({}, spe::LegError::timeout), {nullptr, false}).finding);
    }
    SECTION("not after a 100 Continue alone") {
        const auto continued = final_reply({{100, 1000}}, stamp(1, kT0 + 0.001));
        CHECK_FALSE(
            spe::judge_interim(continued, no_final_reply({}, spe::LegError::timeout), {nullptr, false}).finding);
    }
}
