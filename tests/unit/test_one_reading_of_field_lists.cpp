// One field, one reading: the same tricky list values (a quoted comma, an escaped quote inside a
// quoted string, no-cache="a, b", private="x", empty members, tabs, upper-case names, a trailing
// comma) fed to every reader of a list field in the Multiplier and the judge, each expected to see
// the members RFC 9110 5.6.1 gives them: the Cache-Control readers (the judge's, the comparison by
// meaning), the Vary readers (the stored variant's names, the selecting values, the comparison),
// Connection and Proxy-Connection, Pragma, If-None-Match and the caches' claims.
#include "http/field_equivalence.hpp"
#include "http/header_policy.hpp"
#include "http/request_policy.hpp"
#include "judge/cache_claims.hpp"
#include "judge/cache_control.hpp"
#include "judge/cache_facts.hpp"
#include "judge/cache_rules.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace http = boost::beast::http;

namespace {

struct Tricky {
    std::string_view value;
    std::vector<std::string_view> members;  // the one reading
};

// Values every list reader is given, with the members each must see.
const std::vector<Tricky> kTricky = {
    {R"(a, "b, c", d)", {"a", R"("b, c")", "d"}},
    {R"(a, "b,c,close,d", e)", {"a", R"("b,c,close,d")", "e"}},
    {R"(x="q\", r", y)", {R"(x="q\", r")", "y"}},
    {R"(no-cache="a, b", private="x")", {R"(no-cache="a, b")", R"(private="x")"}},
    {"a,,b,", {"a", "b"}},
    {",\ta\t,\t, B ,", {"a", "B"}},
    {"Accept-Encoding,\tCOOKIE", {"Accept-Encoding", "COOKIE"}},
    {",", {}},
};

std::string lowered(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return out;
}

std::string joined(const std::vector<std::string_view>& members, std::string_view separator, bool lower) {
    std::string out;
    for (const auto m : members)
        out.append(out.empty() ? "" : separator).append(lower ? lowered(m) : std::string(m));
    return out;
}

spe::RequestFacts request_with(std::string& block, std::string_view name, std::string_view value) {
    block = "GET http://o/x HTTP/1.1\r\nHost: o\r\n" + std::string(name) + ": " + std::string(value) + "\r\n\r\n";
    return spe::request_facts("GET", "http://o/x", block);
}

}  // namespace

TEST_CASE("Vary: the stored variant's names, the selecting values and the comparison read one list") {
    for (const auto& [value, members] : kTricky) {
        INFO(value);
        std::vector<std::string> names;
        for (const auto m : members)
            names.push_back(lowered(m));
        CHECK(spe::vary_names(value) == names);
        CHECK(spe::equivalent_field_values("vary", value, joined(members, ", ", false)));
        // A field a Vary names is compared as its members, trimmed and lowercased (RFC 9111 4.1).
        std::string block;
        const auto request = request_with(block, "Accept-Language", value);
        CHECK(spe::selecting_value(request, "accept-language") == joined(members, ",", true));
    }
}

TEST_CASE("Connection and Proxy-Connection: the fields they name and their close read as one list") {
    for (const auto& [value, members] : kTricky) {
        INFO(value);
        CHECK(spe::equivalent_field_values("connection", value, joined(members, ", ", false)));
        const bool close = std::find(members.begin(), members.end(), "close") != members.end();
        spe::Request proxy{http::verb::get, "http://o/x", 11};
        proxy.set(http::field::proxy_connection, value);
        CHECK(spe::client_wants_keep_alive(proxy) == !close);
        spe::Request direct{http::verb::get, "http://o/x", 11};
        direct.set(http::field::connection, value);
        CHECK(spe::client_wants_keep_alive(direct) == !close);
    }
    // The names Connection lists go; a quoted string is no name, and what is inside it stays.
    http::fields f;
    f.set(http::field::connection, R"(X-A, "X-B, X-C",, X-D)");
    for (const auto* name : {"X-A", "X-B", "X-C", "X-D"})
        f.set(name, "1");
    spe::strip_hop_by_hop(f);
    CHECK(f.count("X-A") == 0);
    CHECK(f.count("X-B") == 1);
    CHECK(f.count("X-C") == 1);
    CHECK(f.count("X-D") == 0);
}

TEST_CASE("Cache-Control: the judge and the comparison by meaning read the same directives") {
    // An escaped quote inside a quoted argument does not end it: no-store is in private's argument.
    constexpr std::string_view escaped = R"(private="a\", no-store, b", max-age=5)";
    const auto cc = spe::parse_cache_control(escaped);
    CHECK_FALSE(cc.no_store);
    CHECK(cc.private_fields);
    CHECK(cc.max_age == 5);
    CHECK(spe::equivalent_field_values("cache-control", escaped, R"(max-age=5, private="a\", no-store, b")"));
    CHECK_FALSE(spe::equivalent_field_values("cache-control", escaped, R"(no-store, max-age=5, private="a\", b")"));

    // Empty members, tabs, upper-case names, a trailing comma, a quoted comma.
    constexpr std::string_view mixed = ",\tNo-Cache=\"A, B\",,\tPRIVATE=\"x\" ,\tMAX-AGE=60,";
    const auto m = spe::parse_cache_control(mixed);
    CHECK(m.no_cache_fields);
    CHECK_FALSE(m.no_cache);
    CHECK(m.no_cache_names == "a b");
    CHECK(m.private_fields);
    CHECK(m.private_names == "x");
    CHECK(m.max_age == 60);
    CHECK(spe::equivalent_field_values("cache-control", mixed, R"(max-age=60, no-cache="b, a", private=x)"));
}

TEST_CASE("Pragma: no-cache is a member of its own, not a word inside a quoted string") {
    std::string block;
    CHECK(request_with(block, "Pragma", "x,\tNO-CACHE,").pragma_no_cache);
    CHECK_FALSE(request_with(block, "Pragma", R"(x="a,no-cache,b")").pragma_no_cache);
}

TEST_CASE("If-None-Match: an entity-tag with a comma inside its quotes is one member") {
    spe::CacheHeaders reply;
    reply.set(spe::CacheField::etag, R"(W/"a,b")");
    reply.set(spe::CacheField::last_modified, "Sun, 06 Nov 1994 08:49:37 GMT");
    std::string block;
    const auto matching = request_with(block, "If-None-Match", R"("x",, W/"a,b" ,)");
    CHECK_FALSE(spe::not_modified_finding(matching, reply, nullptr));
    std::string other_block;
    const auto other = request_with(other_block, "If-None-Match", R"("a", "b")");
    REQUIRE(spe::not_modified_finding(other, reply, nullptr));
    CHECK(spe::not_modified_finding(other, reply, nullptr)->rule == "not-modified");
}

TEST_CASE("Cache-Status and X-Cache: a claim per member, a quoted name kept whole") {
    spe::CacheHeaders h;
    h.set(spe::CacheField::cache_status, R"(collector; fwd=uri-miss,, "Edge, one"; hit,)");
    CHECK(spe::claim_names(h) == std::vector<std::string>{"collector", "Edge, one"});
    CHECK(spe::cache_claim(h, {"collector"}) == spe::CacheClaim::hit);
    CHECK(spe::cache_claim(h, {"collector", "Edge, one"}) == spe::CacheClaim::none);
    spe::CacheHeaders x;
    x.set(spe::CacheField::x_cache, "MISS from collector,\tHIT from squid,");
    CHECK(spe::claim_names(x) == std::vector<std::string>{"collector", "squid"});
    CHECK(spe::cache_claim(x, {"collector"}) == spe::CacheClaim::hit);
}
