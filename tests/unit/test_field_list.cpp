// The list grammar (http/field_list.hpp) against RFC 9110's own examples: 5.6.1's lists, 5.6.4's
// quoted strings, 5.6.6's parameters.
#include "http/field_list.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using spe::FieldList;

namespace {
std::vector<std::string> members(std::string_view value, FieldList::Brackets brackets = FieldList::Brackets::none) {
    std::vector<std::string> out;
    for (const auto member : FieldList(value, brackets))
        out.emplace_back(member);
    return out;
}
using Members = std::vector<std::string>;
}  // namespace

TEST_CASE("RFC 9110 5.6.1: the valid examples of example-list") {
    CHECK(members("foo,bar") == Members{"foo", "bar"});
    CHECK(members("foo ,bar,") == Members{"foo", "bar"});
    CHECK(members("foo , ,bar,charlie") == Members{"foo", "bar", "charlie"});
}

TEST_CASE("RFC 9110 5.6.1: the empty lists a recipient tolerates read as no member") {
    for (const auto* value : {"", ",", ",   ,", " ", "\t,\t"}) {
        INFO(value);
        CHECK(FieldList(value).empty());
        CHECK_FALSE(FieldList(value).first().has_value());
    }
    CHECK(FieldList(std::string_view{}).empty());
}

TEST_CASE("RFC 9110 5.6.1: tabs are optional whitespace around a member") {
    CHECK(members("\tfoo\t,\t bar \t") == Members{"foo", "bar"});
    CHECK(members("a b, c") == Members{"a b", "c"});  // whitespace inside a member is the member's
}

TEST_CASE("RFC 9110 5.6.4: a comma inside a quoted string, escaped quotes included, separates nothing") {
    CHECK(members(R"(no-cache="a, b", public)") == Members{R"(no-cache="a, b")", "public"});
    CHECK(members(R"(x="a\", b", y)") == Members{R"(x="a\", b")", "y"});
    CHECK(members(R"(x="a\\", y)") == Members{R"(x="a\\")", "y"});  // an escaped backslash, then the close
    CHECK(members(R"("a,b", W/"c,d")") == Members{R"("a,b")", R"(W/"c,d")"});
    // An unclosed quote runs to the end: the rest is one member, as written.
    CHECK(members(R"(a, "b, c)") == Members{"a", R"("b, c)"});
}

TEST_CASE("Link's URIs between angle brackets keep their commas, when asked") {
    constexpr std::string_view link = "<https://x/a,b>; rel=next, </c>; rel=prev";
    CHECK(members(link, FieldList::Brackets::angle_brackets) == Members{"<https://x/a,b>; rel=next", "</c>; rel=prev"});
    CHECK(members(link).size() == 3);  // other fields have no brackets: < is no delimiter there
}

TEST_CASE("lists_token: a member equal to the token, in any case") {
    CHECK(spe::lists_token("Keep-Alive, Upgrade", "upgrade"));
    CHECK(spe::lists_token(" close ", "close"));
    CHECK(spe::lists_token(",,\tCLOSE,", "close"));
    CHECK_FALSE(spe::lists_token("closed", "close"));
    CHECK_FALSE(spe::lists_token("", "close"));
    CHECK_FALSE(spe::lists_token(R"("x, close")", "close"));  // quoted: no member of its own
}

TEST_CASE("split_member: name and value, the value as written") {
    auto parts = spe::split_member("max-age=60");
    CHECK(parts.name == "max-age");
    CHECK(parts.value == "60");
    parts = spe::split_member("no-store");
    CHECK(parts.name == "no-store");
    CHECK_FALSE(parts.value.has_value());
    parts = spe::split_member(R"(no-cache = "a, b")");
    CHECK(parts.name == "no-cache");
    CHECK(parts.value == R"("a, b")");
    parts = spe::split_member("private=");
    CHECK(parts.value == "");
}

TEST_CASE("RFC 9110 5.6.4: a quoted string's content, its quoted-pairs undone") {
    CHECK(spe::quoted_string(R"("a, b")") == "a, b");
    CHECK(spe::quoted_string(R"("say \"hi\"")") == R"(say "hi")");
    CHECK(spe::quoted_string(R"("a\\b")") == R"(a\b)");
    CHECK(spe::quoted_string(R"("")") == "");
    CHECK_FALSE(spe::quoted_string("token").has_value());
    CHECK_FALSE(spe::quoted_string(R"("a"b")").has_value());  // two strings, not one
    CHECK_FALSE(spe::quoted_string(R"("open)").has_value());
    CHECK(spe::unquoted(R"("x")") == "x");
    CHECK(spe::unquoted("x") == "x");
}

TEST_CASE("RFC 9110 5.6.6: a member's parameters, token or quoted-string values") {
    const auto m = spe::split_parameters(R"(ExampleCache; hit; ttl=30; key="a;b, c"; FWD=stale; d="x\"y")");
    CHECK(m.head == "ExampleCache");
    CHECK(spe::parameter(m.parameters, "hit") == "");
    CHECK(spe::parameter(m.parameters, "ttl") == "30");
    CHECK(spe::parameter(m.parameters, "key") == "a;b, c");  // unquoted by Beast
    CHECK(spe::parameter(m.parameters, "fwd") == "stale");   // parameter names are case-insensitive
    CHECK(spe::parameter(m.parameters, "d") == R"(x"y)");
    CHECK_FALSE(spe::parameter(m.parameters, "stored").has_value());
    // The head may be a quoted string whose ';' is its own.
    const auto quoted = spe::split_parameters(R"("Cache; one" ;hit)");
    CHECK(quoted.head == R"("Cache; one")");
    CHECK(spe::parameter(quoted.parameters, "hit").has_value());
    const auto bare = spe::split_parameters("gzip");
    CHECK(bare.head == "gzip");
    CHECK(bare.parameters.begin() == bare.parameters.end());
}
