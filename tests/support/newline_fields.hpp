// How the judge's fuzz targets read their input: one field value per line, so
// that a seed corpus file is a readable list of header values.
#pragma once

#include <string_view>
#include <vector>

namespace spe::test {

/// The input cut at newlines into `n` fields (the rest, newlines and all, in the last; missing ones empty).
inline std::vector<std::string_view> newline_fields(std::string_view text, std::size_t n) {
    std::vector<std::string_view> out;
    while (out.size() + 1 < n) {
        const auto nl = text.find('\n');
        if (nl == std::string_view::npos) break;
        out.push_back(text.substr(0, nl));
        text.remove_prefix(nl + 1);
    }
    out.push_back(text);
    out.resize(n);
    return out;
}

}  // namespace spe::test
