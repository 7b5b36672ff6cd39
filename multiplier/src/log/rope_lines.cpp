#include "log/rope_lines.hpp"

#include <fmt/format.h>

#include <ctime>
#include <optional>

namespace spe {
namespace {

std::string seconds_micros(const std::optional<std::int64_t>& us) {
    const auto v = us.value_or(0);
    return fmt::format("{}:{}", v / 1'000'000, v % 1'000'000);
}

std::string ctime_of(double ts) {
    auto t = static_cast<std::time_t>(ts);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S %Y", &tm);
    return buf;
}

}  // namespace

std::string to_rope_lines(const RequestRecord& r, long pid) {
    // Figure 3: date:(pid):RESULT: name: initial-latency transfer-time size {validation} client type version method url
    const auto client_ip = r.client.substr(0, r.client.rfind(':'));
    const auto tail = fmt::format("{} {} {} {} {}", client_ip, r.validation ? "validation" : "non-validation",
                                  r.version, r.method, r.url);
    const auto prefix = fmt::format("{}:(pid={}):RESULT: ", ctime_of(r.ts), pid);
    auto transfer = [](const Measure& m) -> std::optional<std::int64_t> {
        if (!m.total_us || !m.ttfb_us) return std::nullopt;
        return *m.total_us - *m.ttfb_us;
    };
    std::string out = fmt::format("{}Collector: {} {} {} {{DUMMY,}} {}\n", prefix, seconds_micros(r.collector.ttfb_us),
                                  seconds_micros(transfer(r.collector)), r.collector.bytes, tail);
    const auto ref_status = r.collector.status ? std::to_string(*r.collector.status) : "-";
    for (const auto& p : r.proxies) {
        std::string validation = fmt::format(
            "{},{},{},", ref_status, p.measure.status ? std::to_string(*p.measure.status) : "-", to_string(p.result));
        if (p.result == ResultClass::header_mismatch || p.result == ResultClass::other_fetch)
            for (const auto& h : p.mismatched_headers)
                validation += h + ",";
        out += fmt::format("{}{}: {} {} {} {{{}}} {}\n", prefix, p.name, seconds_micros(p.measure.ttfb_us),
                           seconds_micros(transfer(p.measure)), p.measure.bytes, validation, tail);
    }
    return out;
}

}  // namespace spe
