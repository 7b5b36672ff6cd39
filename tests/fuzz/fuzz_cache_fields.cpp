// libFuzzer: the caching fields an untrusted reply (and request) may carry,
// through the cache-rule judge's parsers and the judge itself: HTTP-dates,
// Cache-Control, Age, Vary, ETag and the provenance stamps. Properties: no
// crash or sanitizer report; a date that parses is one RFC 9110 5.6.7 form
// and reads back the same when written as IMF-fixdate; every record is judged
// (a verdict on every reply that has a status), none dropped.
#include "http/http_date.hpp"
#include "judge/cache_control.hpp"
#include "judge/cache_facts.hpp"
#include "judge/cache_judge.hpp"
#include "judge/delta_seconds.hpp"
#include "judge/fetch_stamp.hpp"
#include "judge_records.hpp"
#include "newline_fields.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check_date(std::string_view text) {
    const auto t = spe::parse_http_date(text);
    if (!t) return;
    // Years 0000-9999 only: anything else did not come from the fixed widths.
    if (*t < -62'167'219'200 || *t >= 253'402'300'800) std::abort();
    if (text.size() != 29 && text.size() != 24 && text.find('-') == std::string_view::npos) std::abort();
    if (*t < 0 || *t >= 253'402'300'800) return;
    const std::time_t tt = static_cast<std::time_t>(*t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    std::array<char, 64> buf{};
    const auto n = std::strftime(buf.data(), buf.size(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    // A leap second (:60) reads as the next second's date: compare by value.
    if (n == 0 || spe::parse_http_date({buf.data(), n}) != *t) std::abort();
}

spe::Measure reply(std::span<const std::string_view> f, std::string stamp, unsigned status, const std::string& to) {
    spe::Measure m;
    m.status = status;
    m.ttfb_us = 1000;
    m.fetch = std::move(stamp);
    static constexpr std::array kFields = {
        spe::CacheField::cache_control, spe::CacheField::expires, spe::CacheField::date, spe::CacheField::last_modified,
        spe::CacheField::age,           spe::CacheField::vary,    spe::CacheField::etag, spe::CacheField::validated};
    for (std::size_t i = 0; i < kFields.size() && i < f.size(); ++i)
        if (!f[i].empty()) m.cache_headers.set(kFields[i], f[i]);
    if (!to.empty()) m.cache_headers.set(spe::CacheField::reply_to, to);
    return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const unsigned status = data[0] % 2 ? 304 : 200;
    const double later = data[1] % 32 / 4.0;
    // Cache-Control, Expires, Date, Last-Modified, Age, Vary, ETag, X-SPE-Validated, X-SPE-Fetch, request header.
    const auto f = spe::test::newline_fields({reinterpret_cast<const char*>(data + 2), size - 2}, 10);

    for (const auto& v : f) {
        check_date(v);
        (void)spe::parse_first_http_date(v);
        (void)spe::parse_cache_control(v);
        (void)spe::vary_names(v);
        if (const auto s = spe::parse_fetch_stamp(v); s && (s->time <= 0 || s->id.size() > spe::FetchStamp::kMaxId))
            std::abort();
        (void)spe::parse_unix_seconds(v);
        for (const auto n : {spe::parse_delta_seconds(v), spe::directive_seconds(v), spe::age_seconds(v)})
            if (n && (*n < 0 || *n > spe::kDeltaSecondsInfinity)) std::abort();
    }

    // The fields as an origin's reply, then the same copy reused by the proxy
    // (its own fields, its own stamp text) for a request with the input's header.
    using spe::test::kT0;
    spe::CacheJudge judge({"p"}, 16);
    const std::string first_stamp = spe::test::fetch_stamp(1, kT0 + 0.001);
    auto fetch =
        spe::test::one_proxy_record(1, kT0, reply(f, first_stamp, 200, "tag-1"), reply(f, first_stamp, 200, "tag-1"));
    judge.judge(fetch, "GET http://o/x HTTP/1.1\r\n\r\n");
    const std::string request = std::string(f[9]) + "\r\n\r\n";
    auto reuse = spe::test::one_proxy_record(2, kT0 + later, reply(f, first_stamp, status, "tag-2"),
                                             reply(f, std::string(f[8]), status, "tag-1"));
    if (status == 304) reuse.proxies[0].measure.fetch.reset();
    judge.judge(reuse, request);
    for (const auto* r : {&fetch, &reuse})
        if (!r->collector.cache || !r->proxies[0].measure.cache) std::abort();  // judged, never dropped
    return 0;
}
