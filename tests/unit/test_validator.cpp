#include "judge/fetch_memory.hpp"
#include "judge/validator.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

using spe::LegError;
using spe::ResultClass;

namespace {
spe::Measure reply(unsigned status, std::string md5, spe::ComparedHeaders headers = {}) {
    spe::Measure m;
    m.status = status;
    m.md5 = std::move(md5);
    m.headers = std::move(headers);
    return m;
}
/// A reply whose header arrived and whose body then failed with `e` (no MD5).
spe::Measure failed_after_header(unsigned status, LegError e, spe::ComparedHeaders headers = {}) {
    auto m = reply(status, "", std::move(headers));
    m.md5.reset();
    m.error = e;
    return m;
}
/// A leg that failed before any reply header.
spe::Measure failed_before_header(LegError e) {
    spe::Measure m;
    m.error = e;
    return m;
}
spe::ProxyResult checked(const spe::Measure& ref, spe::Measure m) {
    spe::ProxyResult r{"p", std::move(m), ResultClass::ok, {"stale"}};
    spe::validate(ref, r);
    return r;
}
using Names = std::vector<std::string>;
const spe::ComparedHeaders kRefHeaders{{"content-type", "text/html"}, {"etag", "1"}};
}  // namespace

TEST_CASE("identical replies are OK and list no header") {
    auto ref = reply(200, "aa", kRefHeaders);
    auto r = checked(ref, ref);
    CHECK(r.result == ResultClass::ok);
    CHECK(r.mismatched_headers.empty());
}

TEST_CASE("headers are compared by meaning: an equivalent value is no mismatch, a changed one is named") {
    const spe::ComparedHeaders ref_headers{{"cache-control", "public, no-transform, proxy-revalidate, max-age=86400"},
                                           {"content-encoding", "gzip, br"},
                                           {"vary", "Accept-Encoding, Cookie"}};
    auto ref = reply(200, "aa", ref_headers);
    auto reordered = checked(ref, reply(200, "aa",
                                        {{"cache-control", "public, proxy-revalidate, no-transform, max-age=86400"},
                                         {"content-encoding", "gzip,br"},
                                         {"vary", "cookie,accept-encoding"}}));
    CHECK(reordered.result == ResultClass::ok);
    CHECK(reordered.mismatched_headers.empty());
    auto changed = checked(ref, reply(200, "aa",
                                      {{"cache-control", "public, no-transform, proxy-revalidate, max-age=86401"},
                                       {"content-encoding", "br, gzip"},
                                       {"vary", "Cookie, Accept-Encoding"}}));
    CHECK(changed.result == ResultClass::header_mismatch);
    CHECK(changed.mismatched_headers == Names{"cache-control", "content-encoding"});
}

TEST_CASE("a complete reply: status, then body MD5, then headers") {
    auto ref = reply(200, "aa", kRefHeaders);
    auto status = checked(ref, reply(203, "bb", {{"content-type", "text/plain"}, {"etag", "1"}}));
    CHECK(status.result == ResultClass::status_code_mismatch);
    CHECK(status.mismatched_headers == Names{"content-type"});

    auto body = checked(ref, reply(200, "bb", kRefHeaders));
    CHECK(body.result == ResultClass::body_mismatch);
    CHECK(body.mismatched_headers.empty());

    auto headers = checked(ref, reply(200, "aa", {{"content-type", "text/html"}, {"x-extra", "1"}}));
    CHECK(headers.result == ResultClass::header_mismatch);
    CHECK(headers.mismatched_headers == Names{"etag", "x-extra"});
}

TEST_CASE("a body cut at the reference's length is compared on its status first") {
    // Sequential mode caps a proxy's read at the Collector's body length; the
    // status is already known then and decides, as in concurrent mode, where
    // the whole body is read.
    SECTION("the Collector's 304 (no body) against a proxy's 200 with a body") {
        auto ref = reply(304, "d41d8cd98f00b204e9800998ecf8427e", {{"etag", "1"}});
        auto r = checked(ref, failed_after_header(200, LegError::body_too_large, {{"etag", "1"}}));
        CHECK(r.result == ResultClass::status_code_mismatch);
        CHECK(r.mismatched_headers.empty());
    }
    SECTION("the Collector's short 200 against a proxy's 500 with a longer body") {
        auto ref = reply(200, "aa", kRefHeaders);
        auto r = checked(ref, failed_after_header(500, LegError::body_too_large, {{"content-type", "text/plain"}}));
        CHECK(r.result == ResultClass::status_code_mismatch);
        CHECK(r.mismatched_headers == Names{"content-type", "etag"});
    }
    SECTION("the same status with a longer body is a BODY_MISMATCH") {
        auto ref = reply(200, "aa", kRefHeaders);
        auto r = checked(ref, failed_after_header(200, LegError::body_too_large, kRefHeaders));
        CHECK(r.result == ResultClass::body_mismatch);
        CHECK(r.mismatched_headers.empty());
    }
}

TEST_CASE("sequential (body cut) and concurrent (body read whole) modes give the same class") {
    auto ref = reply(200, "aa", kRefHeaders);
    for (unsigned proxy_status : {200u, 203u, 304u, 404u, 500u}) {
        CAPTURE(proxy_status);
        const auto cut = checked(ref, failed_after_header(proxy_status, LegError::body_too_large, kRefHeaders));
        const auto whole = checked(ref, reply(proxy_status, "longer", kRefHeaders));
        CHECK(cut.result == whole.result);
        CHECK(cut.mismatched_headers == whole.mismatched_headers);
    }
}

TEST_CASE("a leg that failed before its header is NO_RESPONSE or PROTOCOL_ERROR and lists no header") {
    auto ref = reply(200, "aa", kRefHeaders);
    for (auto e :
         {LegError::refused, LegError::timeout, LegError::reset, LegError::closed, LegError::busy, LegError::aborted}) {
        CAPTURE(to_string(e));
        auto r = checked(ref, failed_before_header(e));
        CHECK(r.result == ResultClass::no_response);
        CHECK(r.mismatched_headers.empty());
    }
    for (auto e : {LegError::bad_header, LegError::header_too_large}) {
        CAPTURE(to_string(e));
        auto r = checked(ref, failed_before_header(e));
        CHECK(r.result == ResultClass::protocol_error);
        CHECK(r.mismatched_headers.empty());
    }
}

TEST_CASE("a leg that failed after its header lists the true header difference") {
    auto ref = reply(200, "aa", kRefHeaders);
    SECTION("same status: the error decides the class") {
        for (auto e : {LegError::truncated, LegError::bad_body, LegError::extra_data}) {
            CAPTURE(to_string(e));
            auto same = checked(ref, failed_after_header(200, e, kRefHeaders));
            CHECK(same.result == ResultClass::protocol_error);
            CHECK(same.mismatched_headers.empty());
            auto other = checked(ref, failed_after_header(200, e, {{"content-type", "text/html"}, {"etag", "2"}}));
            CHECK(other.result == ResultClass::protocol_error);
            CHECK(other.mismatched_headers == Names{"etag"});
        }
        for (auto e : {LegError::timeout, LegError::reset, LegError::aborted}) {
            CAPTURE(to_string(e));
            auto r = checked(ref, failed_after_header(200, e, kRefHeaders));
            CHECK(r.result == ResultClass::no_response);
            CHECK(r.mismatched_headers.empty());
        }
    }
    SECTION("another status: the status decides, the error stays in the measure") {
        for (auto e : {LegError::truncated, LegError::bad_body, LegError::timeout, LegError::reset}) {
            CAPTURE(to_string(e));
            auto r = checked(ref, failed_after_header(503, e, kRefHeaders));
            CHECK(r.result == ResultClass::status_code_mismatch);
            CHECK(r.measure.error == e);
            CHECK(r.mismatched_headers.empty());
        }
    }
}

TEST_CASE("a reference without a status makes any proxy reply a STATUS_CODE_MISMATCH") {
    spe::Measure ref;
    ref.error = LegError::timeout;
    auto r = checked(ref, reply(200, "aa", kRefHeaders));
    CHECK(r.result == ResultClass::status_code_mismatch);
    CHECK(r.mismatched_headers.empty());
}

TEST_CASE("differing_headers merges two sorted lists") {
    spe::ComparedHeaders a{{"a", "1"}, {"c", "3"}, {"d", "4"}};
    spe::ComparedHeaders b{{"b", "2"}, {"c", "3"}, {"d", "5"}};
    CHECK(spe::differing_headers(a, b) == Names{"a", "b", "d"});
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
    CHECK(r.result == ResultClass::header_mismatch);
    CHECK(r.mismatched_headers == Names{"etag"});

    auto with_etag =
        reply(304, "", {{"cache-control", "max-age=60"}, {"content-type", "image/jpeg"}, {"etag", "\"a\""}});
    CHECK(checked(with_etag, nginx).result == ResultClass::ok);
    auto other_etag = reply(304, "", {{"cache-control", "max-age=60"}, {"etag", "\"b\""}});
    CHECK(checked(with_etag, other_etag).mismatched_headers == Names{"etag"});
    auto no_vary = reply(304, "", {{"cache-control", "max-age=60"}, {"etag", "\"a\""}, {"vary", "cookie"}});
    CHECK(checked(no_vary, nginx).mismatched_headers == Names{"vary"});
    // A 200 keeps the full comparison.
    auto ok200 = reply(200, "aa", {{"content-type", "image/jpeg"}});
    CHECK(checked(ok200, reply(200, "aa", {})).mismatched_headers == Names{"content-type"});
}

TEST_CASE("a copy the replay port refused is REPLAY_REFUSED with its reason, whatever its read came to") {
    auto ref = reply(201, "aa", kRefHeaders);
    // Sequential mode cuts the 502's body at the reference's length: the refusal still decides.
    auto refused = failed_after_header(502, LegError::body_too_large);
    refused.replay_refusal = "the body differs from the client's";
    auto r = checked(ref, refused);
    CHECK(r.result == ResultClass::replay_refused);
    CHECK(r.measure.error == LegError::replay_refused);
    CHECK(r.measure.error_detail == "the body differs from the client's");

    auto withheld = failed_before_header(LegError::not_sent);
    CHECK(checked(ref, withheld).result == ResultClass::not_sent);
    // A proxy's own 502 without the replay port's header is the proxy's mismatch.
    CHECK(checked(ref, reply(502, "bb", kRefHeaders)).result == ResultClass::status_code_mismatch);
}

namespace {
const std::string kFetch1 = "5f0a1b2c-1a2b.1; t=1764160000.100";
const std::string kFetch2 = "5f0a1b2c-1a2b.2; t=1764160000.150";
/// A reply from one origin fetch of an origin that stamps each transaction (X-Xact) in its header.
spe::Measure from_fetch(const std::string& fetch, const std::string& xact, std::string md5 = "aa") {
    auto m = reply(200, std::move(md5), {{"content-type", "text/html"}, {"x-xact", xact}});
    m.fetch = fetch;
    return m;
}
spe::ProxyResult checked_with_memory(const spe::FetchMemory& memory, const spe::Measure& ref, spe::Measure m) {
    spe::ProxyResult r{"p", std::move(m), ResultClass::ok, {}};
    spe::validate(ref, r, memory);  // as the fan-out does: the other fetch looked up only for a differing reply
    // The same as with the other fetch looked up first.
    spe::ProxyResult eager{"p", r.measure, ResultClass::ok, {}};
    const auto other = memory.other_fetch(ref, eager.measure);
    spe::validate(ref, eager, other ? &*other : nullptr);
    CHECK(eager.result == r.result);
    CHECK(eager.mismatched_headers == r.mismatched_headers);
    return r;
}
}  // namespace

TEST_CASE("a faithful copy of another origin fetch is OTHER_FETCH, listing the fetches' difference") {
    spe::FetchMemory memory;
    const auto first = from_fetch(kFetch1, "1");  // the client's reply to the first of two concurrent requests
    const auto second = from_fetch(kFetch2, "2");
    memory.remember("GET", first);
    memory.remember("GET", second);
    // The proxy kept the first fetch and serves it for the second request.
    auto r = checked_with_memory(memory, second, first);
    CHECK(r.result == ResultClass::other_fetch);
    CHECK(r.mismatched_headers == Names{"x-xact"});
    // The same fetch as the reference: compared as ever.
    CHECK(checked_with_memory(memory, second, second).result == ResultClass::ok);
    CHECK(checked_with_memory(memory, second, from_fetch(kFetch2, "9")).result == ResultClass::header_mismatch);
}

TEST_CASE("a copy of another fetch is held to that fetch as a client first got it") {
    spe::FetchMemory memory;
    const auto first = from_fetch(kFetch1, "1", "body-1");  // an origin that stamps the body too
    const auto second = from_fetch(kFetch2, "2", "body-2");
    memory.remember("GET", first);
    memory.remember("GET", second);
    SECTION("its body as the fetch had it: the fetches' difference") {
        CHECK(checked_with_memory(memory, second, first).result == ResultClass::other_fetch);
    }
    SECTION("a body changed by the proxy is still its BODY_MISMATCH") {
        auto r = checked_with_memory(memory, second, from_fetch(kFetch1, "1", "body-1-flipped"));
        CHECK(r.result == ResultClass::body_mismatch);
    }
    SECTION("a header changed by the proxy is its HEADER_MISMATCH, naming only what differs from its fetch") {
        auto changed = first;
        changed.headers[0].value = "application/x-fault";
        auto r = checked_with_memory(memory, second, changed);
        CHECK(r.result == ResultClass::header_mismatch);
        CHECK(r.mismatched_headers == Names{"content-type"});
    }
    SECTION("the first reply seen counts: a later one naming the same fetch does not replace it") {
        memory.remember("GET", from_fetch(kFetch1, "1", "body-1-flipped"));
        CHECK(checked_with_memory(memory, second, first).result == ResultClass::other_fetch);
    }
}

TEST_CASE("a fetch SPE never saw whole at a client is compared with the reference as ever") {
    spe::FetchMemory memory;
    const auto second = from_fetch(kFetch2, "2");
    memory.remember("GET", second);
    SECTION("never remembered") {
        CHECK(checked_with_memory(memory, second, from_fetch(kFetch1, "1")).result == ResultClass::header_mismatch);
    }
    SECTION("a HEAD's reply or a cut body is not the fetch's") {
        memory.remember("HEAD", from_fetch(kFetch1, "1"));
        auto cut = from_fetch(kFetch1, "1");
        cut.error = LegError::truncated;
        memory.remember("GET", cut);
        CHECK(checked_with_memory(memory, second, from_fetch(kFetch1, "1")).result == ResultClass::header_mismatch);
    }
    SECTION("the same serial from another Collector process is another fetch") {
        memory.remember("GET", from_fetch("5f0a1b2c-9999.1; t=1764160000.100", "1"));
        CHECK(checked_with_memory(memory, second, from_fetch(kFetch1, "1")).result == ResultClass::header_mismatch);
    }
    SECTION("no stamp on either side") {
        auto unstamped = from_fetch(kFetch1, "1");
        unstamped.fetch.reset();
        CHECK(checked_with_memory(memory, second, unstamped).result == ResultClass::header_mismatch);
    }
}

TEST_CASE("the fetch memory keeps the last fetches, within its bound") {
    spe::FetchMemory memory(16);
    const auto reference = from_fetch("5f0a1b2c-1a2b.1000; t=1764160001.000", "ref");
    for (int i = 1; i <= 64; ++i)
        memory.remember("GET", from_fetch(fmt::format("5f0a1b2c-1a2b.{}; t=1764160000.100", i), std::to_string(i)));
    CHECK_FALSE(memory.other_fetch(reference, from_fetch("5f0a1b2c-1a2b.1; t=1764160000.100", "1")));
    CHECK(memory.other_fetch(reference, from_fetch("5f0a1b2c-1a2b.64; t=1764160000.100", "64")));
}
