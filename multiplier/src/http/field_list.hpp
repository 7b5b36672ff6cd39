// The list grammar of RFC 9110, read one way for every field the Multiplier and the judge split:
// members (5.6.1), quoted strings (5.6.4), a member's name and value, and its parameters (5.6.6).
// Cache-Control, Vary, Connection, Pragma, If-None-Match, Accept-Encoding, Via, Cache-Status and
// X-Cache are all read through it, so one field cannot mean two things in one request.
//
// The members are ours, not Beast's token_list, ext_list or opt_token_list: those accept only
// tokens (with parameters), so a Cache-Control argument (no-cache="a, b"), an entity-tag
// (W/"a,b"), a Cache-Status name that is a quoted string or an X-Cache value ("HIT from name")
// is outside their grammar, and at the first member outside it they end the list without a
// word. The judge reads what a proxy sent, malformed or not, and must see every member of it.
// A member's parameters, tokens with token or quoted-string values, are Beast's param_list
// (split_parameters(), parameter()): there its grammar is the field's.
#pragma once

#include <boost/beast/http/rfc7230.hpp>

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace spe {

/// The members of a list field value (RFC 9110 5.6.1): separated by commas, each trimmed of the
/// optional whitespace (spaces, tabs) around it, empty ones skipped (", ,", a leading or trailing
/// comma). A comma inside a quoted string (5.6.4, with backslash escapes) separates nothing; an
/// unclosed quote runs to the end of the value, whose rest is then one member, as written.
/// A repeated field's lines joined with ", " read as one list, as 5.3 makes them.
class FieldList {
public:
    /// Link (RFC 8288 3) writes each member's URI between angle brackets, where a comma is part of
    /// the URI: read with `angle_brackets`, such a comma separates nothing either.
    enum class Brackets { none, angle_brackets };

    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = std::string_view;
        using difference_type = std::ptrdiff_t;
        using pointer = const std::string_view*;
        using reference = std::string_view;

        iterator() = default;
        iterator(std::string_view rest, Brackets brackets) : rest_(rest), brackets_(brackets) { advance(); }

        std::string_view operator*() const { return member_; }
        const std::string_view* operator->() const { return &member_; }
        iterator& operator++() {
            advance();
            return *this;
        }
        iterator operator++(int) {
            auto before = *this;
            advance();
            return before;
        }
        friend bool operator==(const iterator& a, const iterator& b) {
            return a.done_ == b.done_ && (a.done_ || a.member_.data() == b.member_.data());
        }

    private:
        void advance();

        std::string_view rest_;
        std::string_view member_;
        Brackets brackets_ = Brackets::none;
        bool done_ = true;
    };

    explicit FieldList(std::string_view value, Brackets brackets = Brackets::none)
        : value_(value), brackets_(brackets) {}

    iterator begin() const { return {value_, brackets_}; }
    iterator end() const { return {}; }
    bool empty() const { return begin() == end(); }
    /// The first member, or nullopt for a list of none.
    std::optional<std::string_view> first() const;

private:
    std::string_view value_;
    Brackets brackets_;
};

/// Whether the list has `token` among its members, compared without regard to case (Connection's
/// options, Transfer-Encoding's codings, Pragma's no-cache).
bool lists_token(std::string_view list, std::string_view token);

/// A member of the form `name` or `name=value`: a Cache-Control directive (RFC 9111 5.2), a
/// Pragma, a parameter (RFC 9110 5.6.6). Whitespace around the '=' is tolerated.
struct MemberParts {
    std::string_view name;
    /// As written, trimmed: a token, or a quoted string with its quotes (unquoted() reads it).
    std::optional<std::string_view> value;
};

MemberParts split_member(std::string_view member);

/// The content of the quoted string that is the whole of `text` (RFC 9110 5.6.4), its quoted-pairs
/// undone; nullopt when `text` is no single quoted string (unquoted, unclosed, or a quote inside).
std::optional<std::string> quoted_string(std::string_view text);

/// A value as its sender meant it: a quoted string's content, or a token as it is.
std::string unquoted(std::string_view value);

/// A member split at its first ';' outside a quoted string: what comes before (trimmed: a
/// Cache-Status's cache name, Accept-Encoding's coding) and its parameters from the ';' on.
struct ParameterizedMember {
    std::string_view head;
    boost::beast::http::param_list parameters;
};

ParameterizedMember split_parameters(std::string_view member);

/// The value of the first parameter named `name` (case-insensitive, RFC 9110 5.6.6), a quoted
/// string's content with its quoted-pairs undone (Beast's param_list unquotes it into its iterator,
/// hence a copy): empty for a bare one; nullopt when there is none. Beast's param_list ends at the
/// first parameter outside 5.6.6's grammar: the ones after it are not seen.
std::optional<std::string> parameter(const boost::beast::http::param_list& parameters, std::string_view name);

}  // namespace spe
