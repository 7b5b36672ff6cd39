// ASCII case-insensitive comparison of header names and tokens, and the
// optional whitespace around a field value or list item. Not Beast's
// iequals: Boost 1.81's (Debian 12) reads one byte past both strings when they
// differ only in case up to the end (found by fuzz_cache_fields on a header
// value that ended the buffer: "max-Age").
#pragma once

#include <string>
#include <string_view>

namespace spe {

constexpr char ascii_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Appends `s` to `out`, lowercased.
inline void append_lower(std::string& out, std::string_view s) {
    // Grown once and written in place: a character at a time costs a capacity check each.
    const auto at = out.size();
    out.resize(at + s.size());
    for (std::size_t i = 0; i < s.size(); ++i)
        out[at + i] = ascii_lower(s[i]);
}

constexpr bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

/// `s` without the optional whitespace (and a stray CR) around it.
constexpr std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace spe
