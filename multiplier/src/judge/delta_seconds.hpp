// delta-seconds (RFC 9111 1.2.2): how the judge reads a number of seconds in a
// Cache-Control argument (max-age, s-maxage, ...) and in Age (5.1). One
// reading everywhere, so a value that is no number in one place is none in
// any other: "10s" is neither 10 nor anything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace spe {

/// 2^31, what RFC 9111 1.2.2 says a cache MUST consider a delta-seconds that
/// is greater than the greatest integer it can represent ("infinity": over 68
/// years). The judge reads every value from there up as this one.
inline constexpr std::int64_t kDeltaSecondsInfinity = 2147483648;

/// The seconds `text` gives as delta-seconds (`1*DIGIT`, leading zeros
/// allowed), at most kDeltaSecondsInfinity; nullopt when it is no
/// delta-seconds: empty, a sign, a fraction, a suffix, spaces or quotes.
std::optional<std::int64_t> parse_delta_seconds(std::string_view text);

/// A Cache-Control directive's argument as delta-seconds, in token or
/// quoted-string form: RFC 9111 5.2 lets arguments use either syntax and
/// has recipients accept both (`max-age="3600"` is 3600), though 5.2.2.1
/// forbids senders the quoted form. Anything else (`'3600'`, `3600s`, `-1`,
/// empty) is no delta-seconds: nullopt.
std::optional<std::int64_t> directive_seconds(std::string_view argument);

/// An Age field value (RFC 9111 5.1): the first member of a list (a cache
/// SHOULD use it and discard the rest), as delta-seconds; nullopt when that
/// member is invalid, an Age a cache SHOULD ignore.
std::optional<std::int64_t> age_seconds(std::string_view value);

}  // namespace spe
