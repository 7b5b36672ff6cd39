#include "http/header_policy.hpp"

#include <catch2/catch.hpp>

namespace http = boost::beast::http;

TEST_CASE("hop-by-hop headers go, including those named in Connection") {
    http::fields f;
    f.set(http::field::connection, "keep-alive, X-Session-Hop");
    f.set("X-Session-Hop", "1");
    f.set(http::field::keep_alive, "timeout=5");
    f.set(http::field::proxy_connection, "keep-alive");
    f.set(http::field::transfer_encoding, "chunked");
    f.set(http::field::te, "trailers");
    f.set(http::field::upgrade, "h2c");
    f.set(http::field::proxy_authorization, "Basic eDp5");
    f.set(http::field::content_type, "text/html");
    f.set(http::field::cache_control, "max-age=60");
    spe::strip_hop_by_hop(f);
    int count = 0;
    for (const auto& field : f) {
        ++count;
        CHECK_FALSE(spe::is_hop_by_hop(field.name_string()));
    }
    CHECK(count == 2);
    CHECK(f[http::field::content_type] == "text/html");
    CHECK(f.count("X-Session-Hop") == 0);
}

TEST_CASE("a field Connection names goes whatever its case, every instance; its options close and keep-alive stay") {
    http::fields f;
    f.set(http::field::connection, "close, cache-control");
    f.insert(http::field::cache_control, "max-age=60");
    f.set(http::field::content_type, "text/html");
    f.insert("Cache-Control", "public");
    f.insert("Close", "1");  // not a field anybody sends, but named "close": kept
    spe::strip_hop_by_hop(f);
    CHECK(f.count(http::field::cache_control) == 0);
    CHECK(f.count(http::field::connection) == 0);
    CHECK(f[http::field::content_type] == "text/html");
    CHECK(f["Close"] == "1");
}

TEST_CASE("Via is appended with the version the message arrived in") {
    http::fields f;
    spe::append_via(f, 10, "spe-multiplier");
    CHECK(f[http::field::via] == "1.0 spe-multiplier");
    spe::append_via(f, 11, "spe2");
    CHECK(f[http::field::via] == "1.0 spe-multiplier, 1.1 spe2");
}

TEST_CASE("default policy ignores per-hop headers and prefixes, lowercases and joins") {
    spe::HeaderPolicy policy;
    http::fields f;
    f.set(http::field::date, "Mon");
    f.set(http::field::age, "3");
    f.set("X-Cache-Lookup", "HIT");
    f.set("X-Cache", "MISS");
    f.set(http::field::content_length, "10");
    f.insert("Set-Cookie", "a=1");
    f.insert("Set-Cookie", "b=2");
    f.set(http::field::etag, "\"x\"");
    f.set("X-SPE-Fetch", "collector-fetch-12");         // the Collector's stamp: differs per fetch by design
    f.set("X-SPE-Validated", "collector-fetch-13");     // its validation stamp: differs per 304 by design
    f.set("X-SPE-Reply-To", "0123456789abcdef-7");      // the client request the copy was fetched for
    f.set("X-SPE-Parent", "t=1.000; fields=\"etag\"");  // what the Collector sent: differs per reply
    auto selected = policy.select(f);
    REQUIRE(selected.size() == 2);
    CHECK(selected[0] == spe::ComparedHeader{"etag", "\"x\""});
    CHECK(selected[1] == spe::ComparedHeader{"set-cookie", "a=1, b=2"});
}

TEST_CASE("a compare list narrows validation to the named headers") {
    spe::HeaderPolicy policy({"Content-Type", "ETag"}, spe::default_ignored_headers());
    CHECK(policy.is_compared("content-type"));
    CHECK(policy.is_compared("ETAG"));
    CHECK_FALSE(policy.is_compared("Set-Cookie"));
    spe::HeaderPolicy extra({}, {"x-*"});
    CHECK_FALSE(extra.is_compared("X-Anything"));
    CHECK(extra.is_compared("Date"));  // only the given ignore list applies
}

TEST_CASE("select applies prefix patterns and compare lists to known and unknown names alike") {
    http::fields f;
    f.set(http::field::content_type, "text/plain");
    f.set(http::field::content_language, "en");
    f.set("X-Custom", "1");
    f.insert("x-custom", "2");
    f.set(http::field::etag, "\"e\"");
    f.insert("Vary", "Accept");
    f.insert("VARY", "Cookie");
    spe::HeaderPolicy prefix({}, {"content-*"});
    auto selected = prefix.select(f);
    REQUIRE(selected.size() == 3);
    CHECK(selected[0] == spe::ComparedHeader{"etag", "\"e\""});
    CHECK(selected[1] == spe::ComparedHeader{"vary", "Accept, Cookie"});
    CHECK(selected[2] == spe::ComparedHeader{"x-custom", "1, 2"});
    spe::HeaderPolicy only({"Content-Type", "X-CUSTOM"}, spe::default_ignored_headers());
    selected = only.select(f);
    REQUIRE(selected.size() == 2);
    CHECK(selected[0] == spe::ComparedHeader{"content-type", "text/plain"});
    CHECK(selected[1] == spe::ComparedHeader{"x-custom", "1, 2"});
}

TEST_CASE("the Collector's X-SPE-Origin-<name> is compared as <name>: what the proxies got") {
    // Squid withholds a stored reply's Set-Cookie from the client's hit; the proxies get the
    // origin's (patch 0021), so the reference compares the withheld value as Set-Cookie.
    spe::HeaderPolicy policy;
    http::fields f;
    f.set(http::field::etag, "\"x\"");
    f.insert("X-SPE-Origin-Set-Cookie", "a=1; Path=/");
    f.insert("X-SPE-Origin-Age", "5");  // an ignored name stays ignored under the prefix
    auto selected = policy.select(f);
    REQUIRE(selected.size() == 2);
    CHECK(selected[0] == spe::ComparedHeader{"etag", "\"x\""});
    CHECK(selected[1] == spe::ComparedHeader{"set-cookie", "a=1; Path=/"});
}

TEST_CASE("what the Collector withheld never reaches the client; its stamps go unless kept") {
    http::fields f;
    f.set("X-SPE-Fetch", "c.1; t=1.000");
    f.insert("X-SPE-Origin-Set-Cookie", "a=1");
    f.insert("x-spe-origin-set-cookie", "b=2");
    f.set("X-SPE-Originator", "kept: not the prefix");
    f.set(http::field::etag, "\"x\"");
    spe::erase_withheld_fields(f);
    CHECK(f.count("X-SPE-Origin-Set-Cookie") == 0);
    CHECK(f.count("X-SPE-Fetch") == 1);
    CHECK(f.count("X-SPE-Originator") == 1);
    spe::erase_collector_stamps(f);
    CHECK(f.count("X-SPE-Fetch") == 0);
    CHECK(f.count(http::field::etag) == 1);
}
