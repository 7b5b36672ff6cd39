// HTTP-date (RFC 9110 5.6.7): the three forms a recipient must accept.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace spe {

/// Unix seconds of an HTTP-date (IMF-fixdate, RFC 850 or asctime form), or
/// nullopt when the value is none of them (an invalid Expires means "already
/// expired": RFC 9111 5.3, the caller decides).
/// Exactly the grammar's forms and widths; names and "GMT" in any case (RFC
/// 9111 4.2: a cache SHOULD match dates case-insensitively).
std::optional<std::int64_t> parse_http_date(std::string_view text);

/// The first of several HTTP-dates joined with ", " (a repeated field), or nullopt.
std::optional<std::int64_t> parse_first_http_date(std::string_view text);

}  // namespace spe
