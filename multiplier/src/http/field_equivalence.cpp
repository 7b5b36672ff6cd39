#include "http/field_equivalence.hpp"
#include "core/ascii.hpp"
#include "http/field_list.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

namespace spe {

namespace {

struct NamedRule {
    std::string_view name;
    FieldRule rule;
};

// The list fields a proxy's reply may carry and how their members compare. Order: RFC 9110 says
// where it carries meaning (Content-Encoding: the order applied, 8.4; Via: the hops, 7.6.3) and a
// list with no word on it is kept in order (Link, RFC 8288: the order may matter to its reader).
// Case: tokens whose definition makes them case-insensitive (field names, codings, language
// tags, connection options, range units); methods are case-sensitive (RFC 9110 9.1).
constexpr std::array<NamedRule, 14> kRules = {{
    {"cache-control", FieldRule::cache_directives},
    {"vary", FieldRule::token_set},
    {"connection", FieldRule::token_set},
    {"content-language", FieldRule::token_set},
    {"accept-ranges", FieldRule::token_set},
    {"trailer", FieldRule::token_set},
    {"access-control-allow-headers", FieldRule::token_set},
    {"access-control-expose-headers", FieldRule::token_set},
    {"allow", FieldRule::member_set},
    {"access-control-allow-methods", FieldRule::member_set},
    {"content-encoding", FieldRule::ordered_tokens},
    {"transfer-encoding", FieldRule::ordered_tokens},
    {"via", FieldRule::ordered_list},
    {"link", FieldRule::ordered_list},
}};

/// The members of a list field value (http/field_list.hpp). Link's URIs (RFC 8288 3), between angle
/// brackets, may hold commas of their own; no other compared field has brackets.
FieldList members(std::string_view value, bool link = false) {
    return FieldList(value, link ? FieldList::Brackets::angle_brackets : FieldList::Brackets::none);
}

std::string lowered(std::string_view s) {
    std::string out;
    append_lower(out, s);
    return out;
}

/// A qualified no-cache's or private's field names (RFC 9111 5.2.2.4, 5.2.2.7): a set of
/// case-insensitive names, written one way.
std::string field_name_set(std::string_view list) {
    std::vector<std::string> names;
    for (const auto member : members(list))
        names.push_back(lowered(member));
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out;
    for (const auto& n : names)
        out.append(out.empty() ? "" : ",").append(n);
    return out;
}

using Directive = std::pair<std::string, std::optional<std::string>>;

/// Cache-Control's directives (RFC 9111 5.2) as (lowercase name, unquoted argument), sorted: a
/// multiset, since a repeated directive may mean something of its own (4.2.1).
std::vector<Directive> directives(std::string_view value) {
    std::vector<Directive> out;
    for (const auto member : members(value)) {
        const auto parts = split_member(member);
        auto name = lowered(parts.name);
        std::optional<std::string> argument;
        if (parts.value) {
            argument = unquoted(*parts.value);
            if (name == "no-cache" || name == "private") argument = field_name_set(*argument);
        }
        out.emplace_back(std::move(name), std::move(argument));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The members, lowercased when `fold_case`, sorted and each once when `as_set`.
std::vector<std::string> normalised(std::string_view value, bool fold_case, bool as_set, bool link = false) {
    std::vector<std::string> out;
    for (const auto member : members(value, link))
        out.push_back(fold_case ? lowered(member) : std::string(member));
    if (as_set) {
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    return out;
}

/// Vary: "*" among its members says the reply varies on more than fields (RFC 9110 12.5.5): the
/// names beside it add nothing.
std::vector<std::string> vary_members(std::string_view value) {
    auto names = normalised(value, true, true);
    if (std::binary_search(names.begin(), names.end(), "*")) return {"*"};
    return names;
}

}  // namespace

FieldRule field_rule(std::string_view lower_name) {
    for (const auto& r : kRules)
        if (r.name == lower_name) return r.rule;
    return FieldRule::exact;
}

bool equivalent_by_meaning(std::string_view lower_name, std::string_view a, std::string_view b) {
    switch (field_rule(lower_name)) {
        case FieldRule::exact:
            return a == b;
        case FieldRule::cache_directives:
            return directives(a) == directives(b);
        case FieldRule::token_set:
            if (lower_name == "vary") return vary_members(a) == vary_members(b);
            return normalised(a, true, true) == normalised(b, true, true);
        case FieldRule::member_set:
            return normalised(a, false, true) == normalised(b, false, true);
        case FieldRule::ordered_tokens:
            return normalised(a, true, false) == normalised(b, true, false);
        case FieldRule::ordered_list:
            return normalised(a, false, false, lower_name == "link") ==
                   normalised(b, false, false, lower_name == "link");
    }
    return a == b;
}

}  // namespace spe
