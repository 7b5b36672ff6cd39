#include "http_date.hpp"

#include <ctime>
#include <string>

namespace spe {

std::optional<std::int64_t> parse_http_date(std::string_view text) {
    // strptime needs a terminated string; dates are short.
    const std::string s(text.substr(0, 64));
    static constexpr const char* kForms[] = {
        "%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850:     Sunday, 06-Nov-94 08:49:37 GMT
        "%a %b %e %H:%M:%S %Y",       // asctime:     Sun Nov  6 08:49:37 1994
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
