// Field values compared by meaning (http/field_equivalence.hpp): what RFC 9110 5.6.1 and RFC 9111
// 5.2 make equal is equal; a directive or member added, dropped or changed is not.
#include "http/field_equivalence.hpp"

#include <catch2/catch.hpp>

using spe::equivalent_field_values;

namespace {
bool same(std::string_view name, std::string_view a, std::string_view b) {
    // The relation is symmetric: asked both ways, so a one-sided shortcut cannot hide.
    const bool ab = equivalent_field_values(name, a, b);
    CHECK(ab == equivalent_field_values(name, b, a));
    return ab;
}
}  // namespace

TEST_CASE("Cache-Control: directives in any order, names in any case, quoted arguments as tokens") {
    CHECK(same("cache-control", "public, no-transform, proxy-revalidate, max-age=86400",
               "public, proxy-revalidate, no-transform, max-age=86400"));
    CHECK(same("cache-control", "Max-Age=60", "max-age=60"));
    CHECK(same("cache-control", "max-age=\"60\"", "max-age=60"));
    CHECK(same("cache-control", "max-age=60,public", "public ,\tmax-age=60"));
    CHECK(same("cache-control", "public, , max-age=60,", "public, max-age=60"));
    // A qualified no-cache's or private's field names: a set, in any case.
    CHECK(same("cache-control", "no-cache=\"Set-Cookie, X-A\"", "no-cache=\"x-a,set-cookie\""));
    CHECK(same("cache-control", "private=\"X-A\"", "private=X-A"));
}

TEST_CASE("Cache-Control: a directive added, dropped or changed is a change in meaning") {
    CHECK_FALSE(same("cache-control", "no-cache, max-age=0", "max-age=0"));
    CHECK_FALSE(same("cache-control", "max-age=60", "max-age=61"));
    CHECK_FALSE(same("cache-control", "max-age=60", "s-maxage=60"));
    CHECK_FALSE(same("cache-control", "max-age=60, max-age=60", "max-age=60"));  // repeated: RFC 9111 4.2.1
    CHECK_FALSE(same("cache-control", "no-cache", "no-cache=\"set-cookie\""));   // unqualified vs qualified
    CHECK_FALSE(same("cache-control", "private=\"\"", "private"));
    CHECK_FALSE(same("cache-control", "no-cache=\"a\"", "no-cache=\"a, b\""));
    CHECK_FALSE(same("cache-control", "ext=\"A\"", "ext=a"));  // an extension's argument keeps its case
}

TEST_CASE("Cache-Control: a comma inside a quoted argument does not split it") {
    CHECK(same("cache-control", "no-cache=\"a, b\", public", "public, no-cache=\"b,a\""));
    CHECK_FALSE(same("cache-control", "ext=\"a, b\"", "ext=\"a\", b"));
}

TEST_CASE("Vary: a set of field names in any case; '*' stands for everything") {
    CHECK(same("vary", "Accept-Encoding, Cookie", "cookie,accept-encoding"));
    CHECK(same("vary", "Accept-Encoding, accept-encoding", "Accept-Encoding"));
    CHECK(same("vary", "*", "Accept, *"));
    CHECK_FALSE(same("vary", "Accept-Encoding", "Accept-Encoding, Cookie"));
    CHECK_FALSE(same("vary", "*", "Accept"));
}

TEST_CASE("unordered token lists: Connection, Content-Language; Allow's methods keep their case") {
    CHECK(same("connection", "close, X-Hop", "x-hop , Close"));
    CHECK(same("content-language", "en, DE", "de, en"));
    CHECK(same("allow", "GET, HEAD", "HEAD,GET"));
    CHECK_FALSE(same("allow", "GET", "get"));  // methods are case-sensitive (RFC 9110 9.1)
}

TEST_CASE("ordered lists: members in order, optional whitespace and empty members ignored") {
    CHECK_FALSE(same("content-encoding", "gzip, br", "br, gzip"));
    CHECK(same("content-encoding", "gzip,br", "gzip ,  br"));
    CHECK(same("content-encoding", "GZIP", "gzip"));  // content codings are case-insensitive (RFC 9110 8.4.1)
    CHECK(same("via", "1.1 a, 1.1 b", "1.1 a,1.1 b,"));
    CHECK_FALSE(same("via", "1.1 a, 1.1 b", "1.1 b, 1.1 a"));
    CHECK(same("link", "<http://x/a,b>; rel=a, <http://x/c>; rel=b", "<http://x/a,b>; rel=a,<http://x/c>; rel=b"));
    CHECK_FALSE(same("link", "<http://x/a,b>; rel=a", "<http://x/a, b>; rel=a"));  // a comma in a URI is no split
}

TEST_CASE("Set-Cookie is no list: its values are never split, reordered or trimmed") {
    // Repeated Set-Cookie lines as the compared headers join them.
    CHECK_FALSE(same("set-cookie", "a=1, b=2", "b=2, a=1"));
    CHECK_FALSE(
        same("set-cookie", "a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT", "a=1; Expires=Wed,21 Oct 2026 07:28:00 GMT"));
    CHECK(same("set-cookie", "a=1, b=2", "a=1, b=2"));
}

TEST_CASE("a field not known as a list is compared byte for byte") {
    CHECK_FALSE(same("expires", "Wed, 21 Oct 2026 07:28:00 GMT", "Wed,21 Oct 2026 07:28:00 GMT"));
    CHECK_FALSE(same("x-custom", "a, b", "b, a"));
    CHECK_FALSE(same("content-type", "text/html", "text/plain"));
    CHECK(same("etag", "\"1\"", "\"1\""));
}

TEST_CASE("an absent field equals only an absent one") {
    CHECK(spe::equivalent_fields("vary", std::nullopt, std::nullopt));
    CHECK_FALSE(spe::equivalent_fields("vary", std::nullopt, "accept"));
    CHECK(spe::equivalent_fields("vary", "A, B", "b,a"));
}
