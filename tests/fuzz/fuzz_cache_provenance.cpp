// libFuzzer: the judge's parsers of the fields that say where a reply came
// from and what a cache claims, which fuzz_cache_fields does not reach: the
// X-SPE-Parent stamp, Cache-Status (RFC 9211) and X-Cache, Age and Date as a
// proxy served them beside its parent's, Content-Encoding against the
// request's Accept-Encoding, a proxy's own X-SPE-Fetch text, and the request
// fields a Vary names. Each through its parser and through the judge, on a
// reply the proxy reused from its store.
// Properties: no crash or sanitizer report; a parent stamp that parses has a
// positive time and says it sent each name it lists; no claim without a
// member to make it, and none once every Cache-Status member is named upstream; a
// request field is found by the one-pass reading exactly when the header
// block has it; every reply with a status is judged.
#include "core/ascii.hpp"
#include "judge/cache_claims.hpp"
#include "judge/cache_facts.hpp"
#include "judge/cache_judge.hpp"
#include "judge/cache_rules.hpp"
#include "judge/interim_rule.hpp"
#include "judge/parent_stamp.hpp"
#include "judge_records.hpp"
#include "newline_fields.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check_parent_stamp(std::string_view value, std::string_view served_date, std::string_view served_names) {
    const auto stamp = spe::parse_parent_stamp(value);
    if (!stamp) return;
    if (!(stamp->time > 0)) std::abort();
    std::string_view names = stamp->fields;
    while (!names.empty()) {
        const auto space = names.find(' ');
        if (const auto name = names.substr(0, space); !name.empty() && !stamp->sent(name)) std::abort();
        if (space == std::string_view::npos) break;
        names.remove_prefix(space + 1);
    }
    const auto date = spe::date_finding(*stamp, served_date);
    if (!stamp->date && date) std::abort();  // no Date sent: the cache had to add one
    (void)spe::stored_fields_finding(*stamp, spe::FieldNameSet::of(served_names), spe::CacheControl{});
}

void check_claims(std::string_view cache_status, std::string_view x_cache) {
    spe::CacheHeaders h;
    h.set(spe::CacheField::cache_status, cache_status);
    h.set(spe::CacheField::x_cache, x_cache);
    // No member, no claim.
    const auto claim = spe::cache_claim(h, {});
    if (claim != spe::CacheClaim::none && spe::trim(cache_status).empty() && spe::trim(x_cache).empty()) std::abort();
    (void)spe::cache_claim(h, spe::claim_names(h));
    // Every Cache-Status member named as upstream's: none is the proxy's own claim.
    h.clear(spe::CacheField::x_cache);
    if (spe::cache_claim(h, spe::claim_names(h)) != spe::CacheClaim::none) std::abort();
}

void check_request_fields(std::string_view block, std::string_view vary) {
    const auto facts = spe::request_facts("GET", "http://o/x", block);
    for (const auto& name : spe::vary_names(vary)) {
        const bool found = spe::find_field(block, name).has_value();
        if (spe::request_field(facts, name).has_value() != found) std::abort();
        if (spe::selecting_value(facts, name).has_value() != found) std::abort();
    }
}

/// The origin's reply, as the Collector got it for the first request: fresh a minute, varying by coding.
spe::Measure origin_reply(const std::string& stamp) {
    spe::Measure m;
    m.status = 200;
    m.ttfb_us = 1000;
    m.fetch = stamp;
    m.cache_headers.set(spe::CacheField::cache_control, "max-age=60");
    m.cache_headers.set(spe::CacheField::vary, "accept-encoding");
    m.cache_headers.set(spe::CacheField::etag, "\"v1\"");
    m.cache_headers.set(spe::CacheField::date, spe::test::http_date(spe::test::kT0));
    m.cache_headers.field_names = spe::FieldNameSet::of("cache-control vary etag date content-type");
    m.interim.push_back({103, 500});
    return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const unsigned status = data[0] & 1 ? 304 : 200;
    const bool interim = data[0] & 2;
    const double later = data[1] % 128 / 2.0;
    // X-SPE-Parent, Cache-Status, X-Cache, Age, Date, Content-Encoding, X-SPE-Fetch, request fields.
    const auto f = spe::test::newline_fields({reinterpret_cast<const char*>(data + 2), size - 2}, 8);
    const std::string block = "GET http://o/x HTTP/1.1\r\n" + std::string(f[7]) + "\r\n\r\n";
    const std::string served_names = "content-type " + std::string(f[5]);

    check_parent_stamp(f[0], f[4], served_names);
    check_claims(f[1], f[2]);
    check_request_fields(block, f[1]);
    check_request_fields(block, f[2]);

    using spe::test::kT0;
    spe::CacheJudge judge({"p"}, 16);
    const std::string first_stamp = spe::test::fetch_stamp(1, kT0 + 0.001);
    auto fetch = spe::test::one_proxy_record(1, kT0, origin_reply(first_stamp), origin_reply(first_stamp));
    fetch.proxies[0].measure.cache_headers.set(spe::CacheField::reply_to, "tag-1");
    judge.judge(fetch, spe::test::kRequest);

    // The proxy serves its stored copy of that fetch (it names the first request), as it says.
    spe::Measure served = origin_reply(first_stamp);
    served.status = status;
    served.cache_headers.set(spe::CacheField::reply_to, "tag-1");
    served.cache_headers.set(spe::CacheField::parent, f[0]);
    served.cache_headers.set(spe::CacheField::cache_status, f[1]);
    served.cache_headers.set(spe::CacheField::x_cache, f[2]);
    served.cache_headers.set(spe::CacheField::age, f[3]);
    served.cache_headers.set(spe::CacheField::date, f[4]);
    served.cache_headers.set(spe::CacheField::content_encoding, f[5]);
    served.cache_headers.field_names = spe::FieldNameSet::of(served_names);
    if (!interim) served.interim.clear();
    auto reuse = spe::test::one_proxy_record(2, kT0 + later, origin_reply(spe::test::fetch_stamp(2, kT0 + later)),
                                             std::move(served));
    judge.judge(reuse, block);

    // A reply whose fetch stamp is the proxy's own text, forwarded for this request.
    spe::Measure forwarded = origin_reply(std::string(f[6]));
    forwarded.cache_headers.set(spe::CacheField::reply_to, "tag-3");
    forwarded.cache_headers.set(spe::CacheField::parent, f[0]);
    const auto reference = origin_reply(spe::test::fetch_stamp(3, kT0 + later + 1));
    (void)spe::is_own_fetch(reference, forwarded, kT0 + later + 0.5);
    (void)spe::interim_text(forwarded);
    auto own = spe::test::one_proxy_record(3, kT0 + later + 1, reference, std::move(forwarded));
    judge.judge(own, block);

    for (const auto* r : {&fetch, &reuse, &own})
        if (!r->collector.cache || !r->proxies[0].measure.cache) std::abort();  // judged, never dropped
    return 0;
}
