// A URL as a 64-bit key: what the judge's per-URL tables and the order tickets compare (the same URL, or
// not), so neither keeps a copy of the URL per entry.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace spe {

using UrlKey = std::uint64_t;

inline UrlKey url_key(std::string_view url) {
    return std::hash<std::string_view>{}(url);
}

}  // namespace spe
