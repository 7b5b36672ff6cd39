#include "validator.hpp"

#include <catch2/catch.hpp>

namespace {
spe::Measure reply(unsigned status, std::string md5, spe::ComparedHeaders headers = {}) {
    spe::Measure m;
    m.status = status;
    m.md5 = std::move(md5);
    m.headers = std::move(headers);
    return m;
}
spe::ProxyResult checked(const spe::Measure& ref, spe::Measure m) {
    spe::ProxyResult r{"p", std::move(m), spe::ResultClass::ok, {}};
    spe::validate(ref, r);
    return r;
}
}  // namespace

TEST_CASE("identical replies are OK") {
    auto ref = reply(200, "aa", {{"content-type", "text/html"}});
    auto r = checked(ref, ref);
    CHECK(r.result == spe::ResultClass::ok);
    CHECK(r.mismatched_headers.empty());
}

TEST_CASE("status beats body beats headers, and header names are always listed") {
    auto ref = reply(200, "aa", {{"content-type", "text/html"}, {"etag", "1"}});
    auto status = checked(ref, reply(203, "bb", {{"content-type", "text/plain"}, {"etag", "1"}}));
    CHECK(status.result == spe::ResultClass::status_code_mismatch);
    CHECK(status.mismatched_headers == std::vector<std::string>{"content-type"});
    CHECK(checked(ref, reply(200, "bb", ref.headers)).result == spe::ResultClass::body_mismatch);
    auto headers = checked(ref, reply(200, "aa", {{"content-type", "text/html"}, {"x-extra", "1"}}));
    CHECK(headers.result == spe::ResultClass::header_mismatch);
    CHECK(headers.mismatched_headers == std::vector<std::string>{"etag", "x-extra"});
}

TEST_CASE("leg errors map to NO_RESPONSE or PROTOCOL_ERROR, an over-long body is a BODY_MISMATCH") {
    auto ref = reply(200, "aa");
    for (auto e : {spe::LegError::refused, spe::LegError::timeout, spe::LegError::reset, spe::LegError::closed}) {
        spe::Measure m;
        m.error = e;
        CHECK(checked(ref, m).result == spe::ResultClass::no_response);
    }
    for (auto e : {spe::LegError::bad_header, spe::LegError::header_too_large, spe::LegError::truncated,
                   spe::LegError::bad_body, spe::LegError::extra_data}) {
        auto m = reply(200, "aa");
        m.error = e;
        CHECK(checked(ref, m).result == spe::ResultClass::protocol_error);
    }
    auto longer = reply(200, "");
    longer.md5.reset();
    longer.error = spe::LegError::body_too_large;
    CHECK(checked(ref, longer).result == spe::ResultClass::body_mismatch);
}

TEST_CASE("differing_headers merges two sorted lists") {
    spe::ComparedHeaders a{{"a", "1"}, {"c", "3"}, {"d", "4"}};
    spe::ComparedHeaders b{{"b", "2"}, {"c", "3"}, {"d", "5"}};
    CHECK(spe::differing_headers(a, b) == std::vector<std::string>{"a", "b", "d"});
    CHECK(spe::differing_headers({}, {}).empty());
}

TEST_CASE("two 304s are compared on the headers RFC 9110 requires of a 304 only") {
    // Squid's 304 from its cache: Content-Type and Last-Modified, no ETag (the reference before
    // the Collector's patch 0008); nginx's: ETag, no Content-Type.
    auto squid = reply(304, "",
                       {{"cache-control", "max-age=60"},
                        {"content-type", "image/jpeg"},
                        {"last-modified", "Tue, 01 Sep 2026 02:00:32 GMT"}});
    auto nginx = reply(304, "", {{"cache-control", "max-age=60"}, {"etag", "\"a\""}, {"x-origin-count", "1"}});
    auto r = checked(squid, nginx);
    CHECK(r.result == spe::ResultClass::header_mismatch);
    CHECK(r.mismatched_headers == std::vector<std::string>{"etag"});

    auto with_etag =
        reply(304, "", {{"cache-control", "max-age=60"}, {"content-type", "image/jpeg"}, {"etag", "\"a\""}});
    CHECK(checked(with_etag, nginx).result == spe::ResultClass::ok);
    auto other_etag = reply(304, "", {{"cache-control", "max-age=60"}, {"etag", "\"b\""}});
    CHECK(checked(with_etag, other_etag).mismatched_headers == std::vector<std::string>{"etag"});
    auto no_vary = reply(304, "", {{"cache-control", "max-age=60"}, {"etag", "\"a\""}, {"vary", "cookie"}});
    CHECK(checked(no_vary, nginx).mismatched_headers == std::vector<std::string>{"vary"});
    // A 200 keeps the full comparison.
    auto ok200 = reply(200, "aa", {{"content-type", "image/jpeg"}});
    CHECK(checked(ok200, reply(200, "aa", {})).mismatched_headers == std::vector<std::string>{"content-type"});
}
