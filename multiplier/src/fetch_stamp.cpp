#include "fetch_stamp.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace spe {
namespace {

bool is_hex_id(std::string_view s) {
    const auto dash = s.find('-');
    auto hex = [](std::string_view h) {
        return !h.empty() &&
               std::all_of(h.begin(), h.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    };
    return dash != std::string_view::npos && hex(s.substr(0, dash)) && hex(s.substr(dash + 1));
}

}  // namespace

std::optional<FetchStamp> parse_fetch_stamp(std::string_view value) {
    const auto semi = value.find(';');
    if (semi == std::string_view::npos) return std::nullopt;
    const auto id = value.substr(0, semi);
    auto rest = value.substr(semi + 1);
    while (!rest.empty() && rest.front() == ' ')
        rest.remove_prefix(1);
    if (rest.substr(0, 2) != "t=") return std::nullopt;
    rest.remove_prefix(2);

    const auto dot = id.rfind('.');
    if (dot == std::string_view::npos || !is_hex_id(id.substr(0, dot))) return std::nullopt;
    FetchStamp stamp;
    const auto serial = id.substr(dot + 1);
    auto [send, sec] = std::from_chars(serial.data(), serial.data() + serial.size(), stamp.serial);
    if (sec != std::errc() || send != serial.data() + serial.size()) return std::nullopt;
    auto [tend, tec] = std::from_chars(rest.data(), rest.data() + rest.size(), stamp.time);
    if (tec != std::errc() || tend != rest.data() + rest.size() || stamp.time <= 0) return std::nullopt;
    stamp.id = std::string(id);
    stamp.collector = std::string(id.substr(0, dot));
    return stamp;
}

}  // namespace spe
