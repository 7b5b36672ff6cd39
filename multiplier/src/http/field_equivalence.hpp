// When two values of one header field mean the same: what the validator (judge/validator.cpp) and
// the cache-rule judge ask before calling a field changed. RFC 9110 5.6.1: a list field's members
// are separated by commas with optional whitespace, empty members ignored, repeated field lines
// equal to one comma-joined line; RFC 9111 5.2: Cache-Control's directives in any order, names in
// any case, a quoted argument equal to the same token. Which fields are lists, and whether their
// order and case carry meaning, is this module's table; a field not in it (Set-Cookie, which is
// no list, and every unknown one) is compared byte for byte. The bytes are compared first: the
// meaning is worked out only for the rare values that differ.
#pragma once

#include <optional>
#include <string_view>

namespace spe {

/// How a field's values are compared.
enum class FieldRule {
    exact,             // byte for byte: no list, or not known as one
    ordered_list,      // members in order, each byte for byte (Via, Link)
    ordered_tokens,    // members in order, case-insensitive tokens (Content-Encoding)
    member_set,        // members in any order, each byte for byte (Allow's methods)
    token_set,         // members in any order, case-insensitive tokens (Vary, Connection)
    cache_directives,  // Cache-Control
};

/// The rule of a field, by its lowercase name.
FieldRule field_rule(std::string_view lower_name);

/// Whether two values whose bytes differ mean the same. `lower_name`: the field's lowercase name;
/// a repeated field's values joined with ", " (as the compared headers and the judge's fields are).
bool equivalent_by_meaning(std::string_view lower_name, std::string_view a, std::string_view b);

/// Whether two values of the field `lower_name` mean the same; equal bytes without further work.
inline bool equivalent_field_values(std::string_view lower_name, std::string_view a, std::string_view b) {
    return a == b || equivalent_by_meaning(lower_name, a, b);
}

/// The same for fields that may be absent: an absent field equals only an absent one.
inline bool equivalent_fields(std::string_view lower_name, std::optional<std::string_view> a,
                              std::optional<std::string_view> b) {
    if (!a || !b) return !a && !b;
    return equivalent_field_values(lower_name, *a, *b);
}

}  // namespace spe
