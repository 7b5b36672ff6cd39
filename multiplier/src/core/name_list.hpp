// A list of field names as the judge keeps them: lowercase, space-separated, each once
// (CacheHeaders::field_names, X-SPE-Parent's names, a qualified no-cache's or private's list).
// Written and read here only, so the three agree on the form.
#pragma once

#include "core/ascii.hpp"

#include <string>
#include <string_view>

namespace spe {

/// Calls `each(name)` for every name of the list, in order.
template <class Each>
void for_each_name(std::string_view list, Each each) {
    while (!list.empty()) {
        const auto space = list.find(' ');
        if (const auto name = list.substr(0, space); !name.empty()) each(name);
        if (space == std::string_view::npos) break;
        list.remove_prefix(space + 1);
    }
}

/// Whether the list names `name` (compared without regard to case).
inline bool name_listed(std::string_view list, std::string_view name) {
    bool found = false;
    for_each_name(list, [&](std::string_view listed) { found = found || iequals(listed, name); });
    return found;
}

/// Adds `name`, lowercased, to a list known not to name it yet.
inline void append_new_name(std::string& list, std::string_view name) {
    if (name.empty()) return;
    if (!list.empty()) list += ' ';
    append_lower(list, name);
}

/// Adds `name`, lowercased, unless the list names it already.
inline void add_name(std::string& list, std::string_view name) {
    if (!name_listed(list, name)) append_new_name(list, name);
}

}  // namespace spe
