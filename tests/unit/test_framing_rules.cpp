// A reply's body against its framing: head-body (RFC 9110 9.3.2) and framing (RFC 9111 3.2), one leg at a
// time (test_cache_judge.cpp judges them over whole records).
#include "judge/framing_rules.hpp"

#include <catch2/catch.hpp>

namespace {

spe::Measure leg(spe::LegError error, std::string detail = {}) {
    spe::Measure m;
    m.status = 200;
    m.bytes = 5;
    m.error = error;
    m.error_detail = std::move(detail);
    return m;
}

}  // namespace

TEST_CASE("head-body: every reply to HEAD has the chance, body bytes after its header break it") {
    const auto body = spe::judge_head_body("HEAD", leg(spe::LegError::extra_data));
    CHECK(body.exercised);
    REQUIRE(body.finding);
    CHECK(body.finding->rule == "head-body");
    CHECK(body.finding->section == "9110 9.3.2");

    const auto clean = spe::judge_head_body("HEAD", leg(spe::LegError::none));
    CHECK(clean.exercised);
    CHECK_FALSE(clean.finding);
    // A cut body is the leg's trouble, not a body sent after a HEAD's header.
    CHECK_FALSE(spe::judge_head_body("HEAD", leg(spe::LegError::truncated)).finding);

    const auto get = spe::judge_head_body("GET", leg(spe::LegError::extra_data));
    CHECK_FALSE(get.exercised);
    CHECK_FALSE(get.finding);
}

TEST_CASE("framing: a reused copy whose body disagrees with its framing, with the leg's reason") {
    for (auto error : {spe::LegError::extra_data, spe::LegError::truncated, spe::LegError::bad_body}) {
        const auto j = spe::judge_framing("GET", true, leg(error, "reading the body after 5 bytes: partial message"));
        CHECK(j.exercised);
        REQUIRE(j.finding);
        CHECK(j.finding->rule == "framing");
        CHECK(j.finding->section == "3.2");
        CHECK(j.finding->reason.find("5 bytes read: reading the body") != std::string::npos);
    }
    // Without a detail of its own the leg's error names what it saw.
    const auto bare = spe::judge_framing("GET", true, leg(spe::LegError::truncated));
    REQUIRE(bare.finding);
    CHECK(bare.finding->reason.find(spe::to_string(spe::LegError::truncated)) != std::string::npos);

    const auto fine = spe::judge_framing("GET", true, leg(spe::LegError::none));
    CHECK(fine.exercised);
    CHECK_FALSE(fine.finding);
    // Another failure of the leg (a timeout) says nothing of the copy's framing.
    CHECK_FALSE(spe::judge_framing("GET", true, leg(spe::LegError::timeout)).finding);
}

TEST_CASE("framing: not a chance for a fetch made for this request, nor for a reply to HEAD") {
    const auto fresh = spe::judge_framing("GET", false, leg(spe::LegError::truncated));
    CHECK_FALSE(fresh.exercised);
    CHECK_FALSE(fresh.finding);
    const auto head = spe::judge_framing("HEAD", true, leg(spe::LegError::extra_data));
    CHECK_FALSE(head.exercised);
    CHECK_FALSE(head.finding);
}
