#include "judge/fetch_stamp.hpp"

#include <array>
#include <charconv>

namespace spe {
namespace {

/// "<hex>-<hex>": a Collector's id (its start time and process id).
bool is_collector_id(std::string_view s) {
    std::size_t dashes = 0;
    for (const char c : s) {
        if (c == '-') {
            ++dashes;
            continue;
        }
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
    }
    return dashes == 1 && s.front() != '-' && s.back() != '-';
}

}  // namespace

std::optional<double> parse_unix_seconds(std::string_view text) {
    // An integer count of 10^-n seconds below 2^53 divides into the double
    // nearest the decimal (IEEE division rounds correctly): the stamps' "%.3f"
    // costs a few instructions instead of a general decimal parse.
    constexpr std::array<double, 7> kScale = {1, 10, 100, 1000, 10'000, 100'000, 1'000'000};
    constexpr std::size_t kExactDigits = 15;  // 10^15 < 2^53
    std::uint64_t units = 0;
    std::size_t digits = 0, decimals = 0;
    bool dot = false;
    for (const char c : text) {
        if (c == '.' && !dot && digits > 0) {
            dot = true;
            continue;
        }
        if (c < '0' || c > '9') return std::nullopt;
        ++digits;
        decimals += dot ? 1 : 0;
        if (digits <= kExactDigits) units = units * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (digits == 0 || text.back() == '.') return std::nullopt;
    if (digits <= kExactDigits && decimals < kScale.size()) return static_cast<double>(units) / kScale[decimals];
    double t = 0;
    std::from_chars(text.data(), text.data() + text.size(), t);  // the form was checked above
    return t;
}

std::optional<FetchStamp> parse_fetch_stamp(std::string_view value) {
    const auto semi = value.find(';');
    if (semi == std::string_view::npos) return std::nullopt;
    const auto id = value.substr(0, semi);
    auto rest = value.substr(semi + 1);
    while (!rest.empty() && rest.front() == ' ')
        rest.remove_prefix(1);
    if (rest.substr(0, 2) != "t=") return std::nullopt;
    rest.remove_prefix(2);
    rest = rest.substr(0, rest.find(';'));  // the parameters after the time are not the stamp's

    const auto dot = id.rfind('.');
    if (id.size() > FetchStamp::kMaxId || dot == std::string_view::npos || !is_collector_id(id.substr(0, dot)))
        return std::nullopt;
    FetchStamp stamp;
    const auto serial = id.substr(dot + 1);
    auto [send, sec] = std::from_chars(serial.data(), serial.data() + serial.size(), stamp.serial);
    if (sec != std::errc() || send != serial.data() + serial.size()) return std::nullopt;
    const auto time = parse_unix_seconds(rest);
    if (!time || *time <= 0) return std::nullopt;
    stamp.time = *time;
    stamp.id.assign(id.data(), id.size());
    stamp.collector_length = static_cast<std::uint8_t>(dot);
    return stamp;
}

std::optional<std::uint64_t> validation_length(std::string_view value) {
    if (!parse_fetch_stamp(value)) return std::nullopt;
    constexpr std::string_view kName = "length=";
    for (auto at = value.find(';'); at != std::string_view::npos; at = value.find(';', at + 1)) {
        auto parameter = value.substr(at + 1);
        while (!parameter.empty() && parameter.front() == ' ')
            parameter.remove_prefix(1);
        if (!parameter.starts_with(kName)) continue;
        parameter = parameter.substr(kName.size(), parameter.find(';') - kName.size());
        std::uint64_t length = 0;
        const auto [end, ec] = std::from_chars(parameter.data(), parameter.data() + parameter.size(), length);
        if (ec == std::errc() && end == parameter.data() + parameter.size() && !parameter.empty()) return length;
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace spe
