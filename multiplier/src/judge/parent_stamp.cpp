#include "judge/parent_stamp.hpp"
#include "core/ascii.hpp"
#include "core/name_list.hpp"

#include "judge/fetch_stamp.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>

namespace spe {
namespace {

void skip_spaces(std::string_view& s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
}

/// A parameter's value: a token up to ';', or a quoted-string (RFC 9110 5.6.4)
/// with its escapes undone. nullopt: a quoted-string that is not closed.
std::optional<std::string> take_value(std::string_view& s) {
    std::string out;
    if (s.empty() || s.front() != '"') {
        const auto end = s.find(';');
        out.assign(s.substr(0, end));
        while (!out.empty() && (out.back() == ' ' || out.back() == '\t'))
            out.pop_back();
        s.remove_prefix(end == std::string_view::npos ? s.size() : end);
        return out;
    }
    for (std::size_t i = 1; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            out += s[++i];
        } else if (s[i] == '"') {
            s.remove_prefix(i + 1);
            return out;
        } else {
            out += s[i];
        }
    }
    return std::nullopt;
}

/// "103 102": the three-digit statuses of a space-separated list; anything else in it is skipped.
std::vector<unsigned> statuses(std::string_view list) {
    std::vector<unsigned> out;
    while (!list.empty()) {
        const auto end = list.find(' ');
        const auto item = list.substr(0, end);
        if (item.size() == 3 && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
            out.push_back(static_cast<unsigned>((item[0] - '0') * 100 + (item[1] - '0') * 10 + (item[2] - '0')));
        list.remove_prefix(end == std::string_view::npos ? list.size() : end + 1);
    }
    return out;
}

}  // namespace

bool ParentStamp::sent(std::string_view lower_name) const {
    return name_listed(fields, lower_name);
}

std::optional<ParentStamp> parse_parent_stamp(std::string_view value) {
    ParentStamp stamp;
    bool timed = false;
    while (true) {
        skip_spaces(value);
        if (value.empty()) break;
        const auto eq = value.find('=');
        const auto semi = value.find(';');
        if (eq == std::string_view::npos || (semi != std::string_view::npos && semi < eq)) {
            if (semi == std::string_view::npos) break;  // a bare word at the end: ignored
            value.remove_prefix(semi + 1);              // a bare word: ignored
            continue;
        }
        const auto name = value.substr(0, eq);
        value.remove_prefix(eq + 1);
        auto v = take_value(value);
        if (!v) return std::nullopt;
        if (spe::iequals(name, "t")) {
            const auto t = parse_unix_seconds(*v);
            if (!t || *t <= 0) return std::nullopt;
            stamp.time = *t;
            timed = true;
        } else if (spe::iequals(name, "age")) {
            stamp.age = std::move(*v);
        } else if (spe::iequals(name, "date")) {
            stamp.date = std::move(*v);
        } else if (spe::iequals(name, "fields")) {
            stamp.fields = std::move(*v);
        } else if (spe::iequals(name, "connection")) {
            stamp.connection = std::move(*v);
        } else if (spe::iequals(name, "interim")) {
            stamp.interim = statuses(*v);
        }
        skip_spaces(value);
        if (value.empty()) break;
        if (value.front() != ';') return std::nullopt;  // junk after a value
        value.remove_prefix(1);
    }
    if (!timed) return std::nullopt;
    return stamp;
}

}  // namespace spe
