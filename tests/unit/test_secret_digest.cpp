// Credentials and cookies as a keyed digest: equal or not, never the value.
#include "http/secret_digest.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

TEST_CASE("equal values give equal digests, different values different ones") {
    const spe::SecretDigest d;
    const auto a = d.digest("session=SECRETCOOKIE123");
    CHECK(a == d.digest("session=SECRETCOOKIE123"));
    CHECK(a != d.digest("session=SECRETCOOKIE124"));
    CHECK(a != d.digest("Session=SECRETCOOKIE123"));  // the bytes as given: normalizing is the caller's
    CHECK(d.digest("") != d.digest(" "));
    // "hmac:" and 16 lowercase hex digits; nothing of the value
    REQUIRE(a.size() == 21);
    CHECK(a.substr(0, 5) == "hmac:");
    CHECK(std::all_of(a.begin() + 5, a.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    CHECK(a.find("SECRET") == std::string::npos);
}

TEST_CASE("each instance has a key of its own; the process keeps one") {
    const spe::SecretDigest one, two;
    CHECK(one.digest("Bearer SECRETTOKEN456") != two.digest("Bearer SECRETTOKEN456"));
    const auto& process = spe::process_secret_digest();
    CHECK(&process == &spe::process_secret_digest());
    CHECK(process.digest("x") == spe::process_secret_digest().digest("x"));
}

TEST_CASE("the secret fields, in any case") {
    for (auto name : {"Cookie", "cookie", "SET-COOKIE", "Set-Cookie", "Authorization", "proxy-authorization",
                      "Proxy-Authorization"})
        CHECK(spe::is_secret_field(name));
    for (auto name :
         {"Cookie2x", "X-Cookie", "Authorization-Info", "Proxy-Authenticate", "WWW-Authenticate", "", "Cache-Control"})
        CHECK_FALSE(spe::is_secret_field(name));
}

TEST_CASE("a header block keeps everything but the secret fields' values") {
    const spe::SecretDigest d;
    const std::string block =
        "HTTP/1.1 200 OK\r\n"
        "Content-Type: text/plain\r\n"
        "Set-Cookie: session=SECRETCOOKIE123; Path=/\r\n"
        "set-cookie:   other=1 \r\n"
        "X-Set-Cookie-Note: session=visible\r\n"
        "Authorization: Bearer SECRETTOKEN456\r\n"
        "Proxy-Authorization: Basic eDp5\r\n"
        "Cookie: a=1; b=2\r\n"
        "\r\n";
    std::string expected = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n";
    expected += "Set-Cookie: " + d.digest("session=SECRETCOOKIE123; Path=/") + "\r\n";
    expected += "set-cookie: " + d.digest("other=1") + "\r\n";
    expected += "X-Set-Cookie-Note: session=visible\r\n";
    expected += "Authorization: " + d.digest("Bearer SECRETTOKEN456") + "\r\n";
    expected += "Proxy-Authorization: " + d.digest("Basic eDp5") + "\r\n";
    expected += "Cookie: " + d.digest("a=1; b=2") + "\r\n\r\n";
    CHECK(spe::redact_header_text(block, d) == expected);
    // An obsolete folded continuation belongs to its field's value; a bare LF ends a line too.
    const auto folded = spe::redact_header_text("HTTP/1.1 200 OK\nSet-Cookie: a=SECRET\n\tb=MORE\nAge: 1\n\n", d);
    CHECK(folded == "HTTP/1.1 200 OK\nSet-Cookie: " + d.digest("a=SECRET b=MORE") + "\nAge: 1\n\n");
    // Nothing to redact: unchanged, including a start line that looks like a field.
    CHECK(spe::redact_header_text("Cookie: not a field line\r\nAge: 3\r\n\r\n", d) ==
          "Cookie: not a field line\r\nAge: 3\r\n\r\n");
    CHECK(spe::redact_header_text("", d).empty());
}
