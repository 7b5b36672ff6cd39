#include "judge/delta_seconds.hpp"
#include "core/ascii.hpp"
#include "http/field_list.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace spe {

std::optional<std::int64_t> parse_delta_seconds(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::int64_t n = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        // Saturated digit by digit: a value of any length is read to its end, so a suffix after
        // more digits than an integer holds is still seen (and makes it no delta-seconds).
        n = std::min(kDeltaSecondsInfinity, n * 10 + (c - '0'));
    }
    return n;
}

std::optional<std::int64_t> directive_seconds(std::string_view argument) {
    if (!argument.empty() && argument.front() == '"') {
        const auto inner = quoted_string(argument);
        return inner ? parse_delta_seconds(*inner) : std::nullopt;
    }
    return parse_delta_seconds(argument);
}

std::optional<std::int64_t> age_seconds(std::string_view value) {
    // Age is a singleton (delta-seconds), read as a list only to take its first member (RFC 9111 5.1): the
    // text before the first comma, as written; an empty one is an invalid Age, not skipped as a list's.
    return parse_delta_seconds(trim(value.substr(0, value.find(','))));
}

}  // namespace spe
