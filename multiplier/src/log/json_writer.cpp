#include "log/json_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>

namespace spe {
namespace {

/// Which bytes a JSON string cannot hold as they are: quote, backslash,
/// control characters, and (for nlohmann's UTF-8 handling) non-ASCII.
constexpr std::array<bool, 256> kNeedsCare = [] {
    std::array<bool, 256> t{};
    for (std::size_t c = 0; c < t.size(); ++c)
        t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
    return t;
}();

/// Whether any of eight bytes needs care, tested at once: a record's strings are mostly plain URLs,
/// stamps and field values, scanned a word at a time instead of a table lookup per byte.
constexpr bool word_needs_care(std::uint64_t x) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
    constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
    const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHighs; };
    const std::uint64_t below_space = (x - kOnes * 0x20) & ~x & kHighs;  // a byte < 0x20 (with none >= 0x80)
    return ((x & kHighs) | below_space | has_zero(x ^ (kOnes * '"')) | has_zero(x ^ (kOnes * '\\'))) != 0;
}

/// The first byte of `s` that needs care, or `s.end()`.
std::string_view::const_iterator first_needing_care(std::string_view s) {
    std::size_t at = 0;
    for (; at + 8 <= s.size(); at += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, s.data() + at, sizeof word);
        if (word_needs_care(word)) break;
    }
    return std::find_if(s.begin() + static_cast<std::ptrdiff_t>(at), s.end(),
                        [](char c) { return kNeedsCare[static_cast<unsigned char>(c)]; });
}

}  // namespace

void JsonWriter::string(std::string_view s) {
    first_ = false;
    const auto care = first_needing_care(s);
    if (care == s.end()) return quoted(s);  // the common case: one append, quotes included
    if (std::any_of(care, s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
        // Non-ASCII: nlohmann's own escaping, which replaces invalid UTF-8 (client-supplied URLs) instead of throwing.
        out_ += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return;
    }
    out_ += '"';
    auto plain = [](char c) { return !kNeedsCare[static_cast<unsigned char>(c)]; };
    while (!s.empty()) {
        // Runs of characters that need no escape go in one append.
        const auto run = static_cast<std::size_t>(std::find_if_not(s.begin(), s.end(), plain) - s.begin());
        out_.append(s.data(), run);
        s.remove_prefix(run);
        if (s.empty()) break;
        const char c = s.front();
        s.remove_prefix(1);
        switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\b':
                out_ += "\\b";
                break;
            case '\f':
                out_ += "\\f";
                break;
            case '\n':
                out_ += "\\n";
                break;
            case '\r':
                out_ += "\\r";
                break;
            case '\t':
                out_ += "\\t";
                break;
            default:
                fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(c));
        }
    }
    out_ += '"';
}

}  // namespace spe
