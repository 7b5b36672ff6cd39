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
