// Records for the cache-rule judge's tests and fuzz target: a client request on
// http://o/x answered by the Collector and one proxy named "p", and the stamps
// and dates its replies carry. One place, so every test builds them alike.
#pragma once

#include "core/measurement.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <utility>

namespace spe::test {

/// The judged records' first request time: any fixed Unix time will do.
inline constexpr double kT0 = 1'700'000'000.0;

/// The client's request as the judge reads its fields.
inline const std::string kRequest = "GET http://o/x HTTP/1.1\r\nHost: o\r\n\r\n";

/// X-SPE-Fetch of the Collector "65f1-1c2": fetch `serial`, made at `t`.
inline std::string fetch_stamp(int serial, double t) {
    return fmt::format("65f1-1c2.{}; t={:.3f}", serial, t);
}

/// `t` as an IMF-fixdate (RFC 9110 5.6.7).
inline std::string http_date(double t) {
    const auto secs = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char out[40];
    std::strftime(out, sizeof out, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return out;
}

/// Request `id` (tag "tag-<id>") at `ts`: the Collector's reply `ref`, proxy "p"'s `proxy` sent 10 ms later.
inline RequestRecord one_proxy_record(std::uint64_t id, double ts, Measure ref, Measure proxy) {
    RequestRecord r;
    r.id = id;
    r.ts = ts;
    r.method = "GET";
    r.url = "http://o/x";
    r.tag = fmt::format("tag-{}", id);
    r.collector = std::move(ref);
    ProxyResult p;
    p.name = "p";
    p.measure = std::move(proxy);
    p.sent_at = ts + 0.01;
    r.proxies.push_back(std::move(p));
    return r;
}

}  // namespace spe::test
