#include "judge/delta_seconds.hpp"
#include "core/ascii.hpp"

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

namespace {

/// The content of a quoted-string (RFC 9110 5.6.4) that is the whole of `text`, its quoted-pairs undone;
/// nullopt when `text` is not one.
std::optional<std::string> unquoted(std::string_view text) {
    if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] == '"') return std::nullopt;  // a quote inside: not one quoted-string
        if (text[i] == '\\' && i + 2 < text.size()) ++i;
        out += text[i];
    }
    return out;
}

}  // namespace

std::optional<std::int64_t> directive_seconds(std::string_view argument) {
    if (!argument.empty() && argument.front() == '"') {
        const auto inner = unquoted(argument);
        return inner ? parse_delta_seconds(*inner) : std::nullopt;
    }
    return parse_delta_seconds(argument);
}

std::optional<std::int64_t> age_seconds(std::string_view value) {
    return parse_delta_seconds(trim(value.substr(0, value.find(','))));
}

}  // namespace spe
