#include "http_date.hpp"

#include <array>
#include <ctime>
#include <string>

namespace spe {
namespace {

int two_digits(std::string_view s, std::size_t at) {
    const char a = s[at], b = s[at + 1];
    if (a < '0' || a > '9' || b < '0' || b > '9') return -1;
    return (a - '0') * 10 + (b - '0');
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the form senders must use,
/// read by position: the judge reads several dates per reply, and strptime
/// costs about fifty times as much.
std::optional<std::int64_t> parse_imf_fixdate(std::string_view s) {
    static constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (s.size() != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[19] != ':' ||
        s[22] != ':' || s.substr(25) != " GMT")
        return std::nullopt;
    unsigned month = 0;
    while (month < 12 && kMonths[month] != s.substr(8, 3))
        ++month;
    const int day = two_digits(s, 5), hi = two_digits(s, 12), lo = two_digits(s, 14);
    const int hour = two_digits(s, 17), minute = two_digits(s, 20), second = two_digits(s, 23);
    if (month == 12 || day < 1 || day > 31 || hi < 0 || lo < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59 ||
        second < 0 || second > 60)
        return std::nullopt;
    const std::int64_t days = days_from_civil(hi * 100 + lo, month + 1, static_cast<unsigned>(day));
    return days * 86400 + hour * 3600 + minute * 60 + second;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view text) {
    if (auto t = parse_imf_fixdate(text)) return t;
    // The obsolete forms a recipient must still accept; strptime needs a terminated string.
    const std::string s(text.substr(0, 64));
    static constexpr const char* kForms[] = {
        "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850:     Sunday, 06-Nov-94 08:49:37 GMT
        "%a %b %e %H:%M:%S %Y",       // asctime:     Sun Nov  6 08:49:37 1994
        "%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate with odd spacing
    };
    for (const char* form : kForms) {
        std::tm tm{};
        const char* end = ::strptime(s.c_str(), form, &tm);
        if (!end) continue;
        while (*end == ' ')
            ++end;
        if (*end) continue;
        return static_cast<std::int64_t>(::timegm(&tm));
    }
    return std::nullopt;
}

}  // namespace spe
