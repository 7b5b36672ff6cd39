#include "http/field_list.hpp"
#include "core/ascii.hpp"

#include <utility>

namespace spe {

namespace {

/// Where the member that starts `text` ends: at the first `stop` character outside a quoted string
/// (and, with angle brackets, outside <...>); text.size() when there is none.
std::size_t member_end(std::string_view text, char stop, FieldList::Brackets brackets) {
    bool quoted = false, escaped = false, bracketed = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (escaped) {
            escaped = false;
        } else if (quoted) {
            escaped = c == '\\';
            quoted = c != '"';
        } else if (bracketed) {
            bracketed = c != '>';
        } else if (c == '"') {
            quoted = true;
        } else if (c == '<' && brackets == FieldList::Brackets::angle_brackets) {
            bracketed = true;
        } else if (c == stop) {
            return i;
        }
    }
    return text.size();
}

}  // namespace

void FieldList::iterator::advance() {
    // A value ending in a comma has rest_ empty but not null: the scan ends at rest_.data() == nullptr.
    while (rest_.data() != nullptr) {
        const auto end = member_end(rest_, ',', brackets_);
        member_ = trim(rest_.substr(0, end));
        rest_ = end < rest_.size() ? rest_.substr(end + 1) : std::string_view{};
        if (!member_.empty()) {
            done_ = false;
            return;
        }
    }
    member_ = {};
    done_ = true;
}

std::optional<std::string_view> FieldList::first() const {
    const auto it = begin();
    if (it == end()) return std::nullopt;
    return *it;
}

bool lists_token(std::string_view list, std::string_view token) {
    for (const auto member : FieldList(list))
        if (spe::iequals(member, token)) return true;
    return false;
}

MemberParts split_member(std::string_view member) {
    // A name is a token, which has no '=': the first one ends it.
    const auto eq = member.find('=');
    if (eq == std::string_view::npos) return {trim(member), std::nullopt};
    return {trim(member.substr(0, eq)), trim(member.substr(eq + 1))};
}

std::optional<std::string> quoted_string(std::string_view text) {
    if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] == '"') return std::nullopt;  // a quote inside: not one quoted string
        if (text[i] == '\\' && i + 2 < text.size()) ++i;
        out += text[i];
    }
    return out;
}

std::string unquoted(std::string_view value) {
    if (auto content = quoted_string(value)) return std::move(*content);
    return std::string(value);
}

ParameterizedMember split_parameters(std::string_view member) {
    const auto semi = member_end(member, ';', FieldList::Brackets::none);
    return {trim(member.substr(0, semi)), boost::beast::http::param_list(member.substr(semi))};
}

std::optional<std::string> parameter(const boost::beast::http::param_list& parameters, std::string_view name) {
    // spe::iequals, not Beast's: Boost's reads past its arguments when they differ only in case (core/ascii.hpp).
    for (const auto& [key, value] : parameters)
        if (spe::iequals(key, name)) return std::string(value);
    return std::nullopt;
}

}  // namespace spe
