#include "judge/cache_control.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"
#include "http/field_list.hpp"
#include "judge/delta_seconds.hpp"

#include <boost/beast/core/string.hpp>

namespace spe {

namespace {

/// max-age and s-maxage: the first occurrence counts (RFC 9111 4.2.1); an invalid one is absent and
/// flagged, the judge reading it as invalid freshness information (cache_rules.cpp).
void freshness_directive(CacheControl& cc, std::optional<std::int64_t>& directive, bool& seen, bool& invalid,
                         std::optional<std::int64_t> value) {
    if (value) cc.freshness_longest = std::max(cc.freshness_longest.value_or(0), *value);
    if (seen) {
        cc.freshness_repeated = true;
        return;
    }
    seen = true;
    directive = value;
    invalid = !value;
}

/// The field names of a qualified no-cache or private ("Set-Cookie, X-Token"), appended lowercase and
/// space-separated; quotes around the list are optional (a token is tolerated).
void add_field_names(std::string& names, std::string_view argument) {
    const auto list = unquoted(argument);
    for (const auto name : FieldList(list))
        add_name(names, name);
}

}  // namespace

CacheControl parse_cache_control(std::string_view value) {
    CacheControl cc;
    bool max_age_seen = false, s_maxage_seen = false;
    for (const auto directive : FieldList(value)) {
        // Named, not bound: clang 14 (the fuzz build) captures no structured binding in a lambda.
        const auto parts = split_member(directive);
        const auto name = parts.name;
        const auto arg = parts.value;
        auto is = [&](std::string_view n) { return spe::iequals(name, n); };
        auto seconds = [&] { return arg ? directive_seconds(*arg) : std::nullopt; };
        if (is("no-store"))
            cc.no_store = true;
        else if (is("no-cache")) {
            (arg ? cc.no_cache_fields : cc.no_cache) = true;
            if (arg) add_field_names(cc.no_cache_names, *arg);
        } else if (is("private")) {
            (arg ? cc.private_fields : cc.private_) = true;
            if (arg) add_field_names(cc.private_names, *arg);
        } else if (is("public"))
            cc.public_ = true;
        else if (is("must-revalidate"))
            cc.must_revalidate = true;
        else if (is("proxy-revalidate"))
            cc.proxy_revalidate = true;
        else if (is("max-age"))
            freshness_directive(cc, cc.max_age, max_age_seen, cc.max_age_invalid, seconds());
        else if (is("s-maxage"))
            freshness_directive(cc, cc.s_maxage, s_maxage_seen, cc.s_maxage_invalid, seconds());
        else if (is("stale-while-revalidate"))
            cc.stale_while_revalidate = seconds();
        else if (is("stale-if-error"))
            cc.stale_if_error = seconds();
        else if (is("max-stale"))
            arg ? void(cc.max_stale = seconds()) : void(cc.max_stale_any = true);
        else if (is("min-fresh"))
            cc.min_fresh = seconds();
        else if (is("only-if-cached"))
            cc.only_if_cached = true;
    }
    return cc;
}

}  // namespace spe
