#include "http/request_policy.hpp"
#include "http/wire_request.hpp"

#include <boost/beast/http/write.hpp>
#include <catch2/catch.hpp>

#include <sstream>

namespace http = boost::beast::http;

namespace {
spe::Request get(const std::string& target, unsigned version = 11) {
    spe::Request r{http::verb::get, target, version};
    return r;
}
spe::Config config() {
    spe::Config c;
    c.listen = {"127.0.0.1", 8080};
    return c;
}
/// The header block a WireRequest sends (its first buffer).
std::string header_of(const spe::WireRequest& wire) {
    const auto header = wire.buffers()[0];
    return {static_cast<const char*>(header.data()), header.size()};
}
}  // namespace

TEST_CASE("absolute-form http URLs are proxy requests; others get a reason") {
    auto c = config();
    CHECK_FALSE(spe::check_request(get("http://example.org/a?b"), c));
    auto origin_form = spe::check_request(get("/index.html"), c);
    REQUIRE(origin_form);
    CHECK(origin_form->status() == 400);
    CHECK_THAT(origin_form->reason, Catch::Contains("absolute http:// URL"));
    auto https = spe::check_request(get("https://example.org/"), c);
    REQUIRE(https);
    CHECK_THAT(https->reason, Catch::Contains("CONNECT"));
}

TEST_CASE("requests to the Multiplier itself or through it again are loops (508)") {
    auto c = config();
    auto self = spe::check_request(get("http://127.0.0.1:8080/x"), c);
    REQUIRE(self);
    CHECK(self->status() == 508);
    CHECK(spe::check_request(get("http://localhost:8080/"), c)->status() == 508);
    CHECK_FALSE(spe::check_request(get("http://127.0.0.1:8081/"), c));
    auto via = get("http://example.org/");
    via.set(http::field::via, "1.1 squid, 1.1 spe-multiplier-8080 (x)");
    CHECK(spe::check_request(via, c)->status() == 508);
    // Another Multiplier (say a --dummy proxy under test behind this one) is no loop.
    via.set(http::field::via, "1.1 spe-multiplier-80800, 1.0 spe-multiplier-9090");
    CHECK_FALSE(spe::check_request(via, c));
}

TEST_CASE("only a target that certainly is the Multiplier is refused before the Via check") {
    auto c = config();
    auto refused = [&](const std::string& target) {
        auto problem = spe::check_request(get(target), c);
        return problem && problem->status() == 508;
    };
    SECTION("listening on a wildcard address: its loopback and wildcard addresses, not other hosts") {
        c.listen = {"0.0.0.0", 8080};
        CHECK(refused("http://127.0.0.1:8080/"));
        CHECK(refused("http://127.0.0.2:8080/"));
        CHECK(refused("http://localhost:8080/"));
        CHECK(refused("http://0.0.0.0:8080/"));
        CHECK(refused("http://[::ffff:127.0.0.1]:8080/"));
        CHECK_FALSE(refused("http://example.org:8080/"));
        CHECK_FALSE(refused("http://192.0.2.10:8080/"));
        CHECK_FALSE(refused("http://[::1]:8080/"));  // an IPv4 wildcard does not take IPv6
        CHECK_FALSE(refused("http://127.0.0.1:8081/"));
        c.listen = {"::", 8080};
        CHECK(refused("http://[::1]:8080/"));
        CHECK(refused("http://127.0.0.1:8080/"));
        CHECK_FALSE(refused("http://example.org:8080/"));
        CHECK_FALSE(refused("http://[2001:db8::1]:8080/"));
    }
    SECTION("listening on one loopback address: another one is another host") {
        c.listen = {"127.0.0.2", 8080};
        CHECK(refused("http://127.0.0.2:8080/"));
        CHECK_FALSE(refused("http://127.0.0.1:8080/"));
        CHECK_FALSE(refused("http://localhost:8080/"));
        c.listen = {"127.0.0.1", 8080};
        CHECK(refused("http://LOCALHOST:8080/"));
        CHECK_FALSE(refused("http://127.0.0.2:8080/"));
        CHECK_FALSE(refused("http://[::1]:8080/"));
    }
    SECTION("a loop through a name the Multiplier cannot know is caught by its Via entry") {
        c.listen = {"0.0.0.0", 8080};
        auto looped = get("http://this-machine.example:8080/");
        CHECK_FALSE(spe::check_request(looped, c));
        looped.set(http::field::via, "1.1 spe-multiplier-8080, 1.1 collector");
        CHECK(spe::check_request(looped, c)->status() == 508);
    }
}

TEST_CASE("a request with both Content-Length and Transfer-Encoding is refused") {
    auto r = get("http://example.org/");
    r.method(http::verb::post);
    r.set(http::field::content_length, "5");
    r.set(http::field::transfer_encoding, "chunked");
    auto problem = spe::check_request(r, config());
    REQUIRE(problem);
    CHECK(problem->status() == 400);
    CHECK_THAT(problem->reason, Catch::Contains("smuggling"));
}

TEST_CASE("transfer codings other than plain chunked are refused") {
    auto r = get("http://example.org/");
    r.method(http::verb::post);
    r.set(http::field::transfer_encoding, "chunked, gzip");
    CHECK(spe::check_request(r, config())->status() == 400);
    r.set(http::field::transfer_encoding, "gzip, chunked");
    CHECK(spe::check_request(r, config())->status() == 400);
    r.set(http::field::transfer_encoding, "gzip");
    CHECK(spe::check_request(r, config())->status() == 501);
    r.set(http::field::transfer_encoding, "Chunked");
    CHECK_FALSE(spe::check_request(r, config()));
}

TEST_CASE("authority parsing") {
    CHECK(spe::http_authority("http://a.b:81/x")->port == 81);
    CHECK(spe::http_authority("HTTP://a.b/x")->port == 80);
    CHECK(spe::http_authority("http://user@a.b:82")->host == "a.b");
    CHECK(spe::http_authority("http://[::1]:83/")->host == "::1");
    CHECK_FALSE(spe::http_authority("http://a.b:0/"));
    CHECK_FALSE(spe::http_authority("http://a.b:99999/"));
    CHECK_FALSE(spe::http_authority("ftp://a.b/"));
}

TEST_CASE("persistence honours Proxy-Connection as browsers send it") {
    auto r10 = get("http://a/", 10);
    CHECK_FALSE(spe::client_wants_keep_alive(r10));
    r10.set(http::field::proxy_connection, "Keep-Alive");
    CHECK(spe::client_wants_keep_alive(r10));
    auto r11 = get("http://a/");
    CHECK(spe::client_wants_keep_alive(r11));
    r11.set(http::field::proxy_connection, "close");
    CHECK_FALSE(spe::client_wants_keep_alive(r11));
}

TEST_CASE("the upstream copy drops hop-by-hop and Expect, adds Via, frames the body by length") {
    spe::Request r{http::verb::post, "http://a/form", 10};
    r.set(http::field::proxy_connection, "keep-alive");
    r.set(http::field::expect, "100-continue");
    r.set(http::field::transfer_encoding, "chunked");
    r.set(http::field::content_type, "text/plain");
    r.body() = "hello";
    auto up = spe::make_upstream_request(r, "spe-multiplier", true);
    CHECK(up.version() == 11);
    CHECK(up[http::field::via] == "1.0 spe-multiplier");
    CHECK(up.count(http::field::expect) == 0);
    CHECK(up.count(http::field::proxy_connection) == 0);
    CHECK(up.count(http::field::transfer_encoding) == 0);
    CHECK(up[http::field::content_length] == "5");
    CHECK(up.keep_alive());
    CHECK(up[http::field::host] == "a");
    auto wrong_host = get("http://user@b.example:8081/p?q");
    wrong_host.set(http::field::host, "elsewhere");
    CHECK(spe::make_upstream_request(wrong_host, "m", true)[http::field::host] == "b.example:8081");
    auto closing = spe::make_upstream_request(get("http://a/"), "spe-multiplier", false);
    CHECK_FALSE(closing.keep_alive());
    CHECK(closing.count(http::field::content_length) == 0);
}

TEST_CASE("conditional requests are ROPE's validation requests") {
    auto r = get("http://a/");
    CHECK_FALSE(spe::is_validation(r));
    r.set(http::field::if_none_match, "\"x\"");
    CHECK(spe::is_validation(r));
}

TEST_CASE("the upstream copy is serialized once, byte for byte as Beast writes it") {
    spe::Request r{http::verb::post, "http://a/form", 11};
    r.set(http::field::content_type, "text/plain");
    r.body() = "hello";
    auto upstream = spe::make_upstream_request(r, "spe-multiplier", true);
    std::ostringstream beast_wrote;
    beast_wrote << upstream;
    const spe::WireRequest wire(std::move(upstream));
    std::string gathered;
    for (auto b : wire.buffers())
        gathered.append(static_cast<const char*>(b.data()), b.size());
    CHECK(gathered == beast_wrote.str());
    CHECK(header_of(wire).substr(0, 30) == "POST http://a/form HTTP/1.1\r\nC");
    CHECK(header_of(wire).ends_with("\r\n\r\n"));

    const spe::WireRequest bodiless(spe::make_upstream_request(get("http://a/"), "m", false));
    CHECK(bodiless.buffers()[1].size() == 0);
    CHECK(header_of(bodiless).ends_with("\r\n\r\n"));
}

TEST_CASE("the upstream copy carries this Multiplier's request tag, never the client's") {
    auto r = get("http://a/");
    r.insert("x-spe-request", "chosen-by-the-client");
    r.insert("X-SPE-Request", "another");
    r.insert("X-Spe-Fetch", "fetch-of-another-request");
    r.insert("x-spe-validated", "validation-of-another-request");
    r.insert("X-SPE-Reply-To", "another-client-request");
    r.insert("X-SPE-Parent", "t=1; fields=\"x\"");
    auto up = spe::make_upstream_request(r, "m", true);
    spe::set_request_tag(up, "0123456789abcdef-42");
    CHECK(up.count("X-SPE-Request") == 1);
    CHECK(up["X-SPE-Request"] == "0123456789abcdef-42");
    CHECK(up.count("X-SPE-Fetch") == 0);
    CHECK(up.count("X-SPE-Validated") == 0);
    CHECK(up.count("X-SPE-Reply-To") == 0);
    CHECK(up.count("X-SPE-Parent") == 0);
    const spe::WireRequest wire(std::move(up));
    CHECK_THAT(header_of(wire), Catch::Contains("\r\nX-SPE-Request: 0123456789abcdef-42\r\n"));
    CHECK_THAT(header_of(wire), !Catch::Contains("chosen-by-the-client"));
}

TEST_CASE("without a tag (--dummy mode) the tag and the stamps pass untouched") {
    auto r = get("http://a/");
    r.insert("X-SPE-Request", "outer-tag-1");
    r.insert("X-SPE-Fetch", "stamp");
    r.insert("X-SPE-Validated", "validation-stamp");
    auto up = spe::make_upstream_request(r, "m", true);
    CHECK(up["X-SPE-Request"] == "outer-tag-1");
    CHECK(up["X-SPE-Fetch"] == "stamp");
    CHECK(up["X-SPE-Validated"] == "validation-stamp");
}

TEST_CASE("request tags: 16 random hex digits per process, then the record id") {
    const auto a = spe::random_process_tag();
    CHECK(a.size() == 16);
    CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(spe::random_process_tag() != a);
    CHECK(spe::request_tag(a, 7) == a + "-7");
}

TEST_CASE("request tags: a --tag-prefix and a dot before the random part, none without one") {
    const auto tagged = spe::process_tag("east");
    CHECK(tagged.size() == 4 + 1 + 16);
    CHECK(tagged.starts_with("east."));
    CHECK(tagged.substr(5).find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(spe::process_tag("").size() == 16);
}

TEST_CASE("a client cannot mark its request as an intercepted https one") {
    auto r = get("http://a/");
    r.insert("X-SPE-Scheme", "https");
    auto up = spe::make_upstream_request(r, "m", true);
    spe::set_request_tag(up, "0123456789abcdef-1");
    CHECK(up.count("X-SPE-Scheme") == 0);
}

TEST_CASE("CONNECT targets: host:port, IPv6 in brackets; anything else is refused") {
    auto t = spe::parse_connect_target("example.org:443");
    REQUIRE(t);
    CHECK(t->host == "example.org");
    CHECK(t->port == 443);
    CHECK(t->bare_host() == "example.org");
    auto v6 = spe::parse_connect_target("[::1]:8443");
    REQUIRE(v6);
    CHECK(v6->host == "[::1]");
    CHECK(v6->bare_host() == "::1");
    for (const char* bad : {"example.org", "example.org:", ":443", "example.org:0", "example.org:65536",
                            "example.org:44x", "a/b:443", "user@host:443", "h:1234567"})
        CHECK_FALSE(spe::parse_connect_target(bad));
}

TEST_CASE("CONNECT targets are authority-form only: reg-name, IPv4 or [IPv6], then exactly one port") {
    // RFC 9110 9.3.6. Squid reads "127.0.0.1:22:443" as host 127.0.0.1 port 22: a target that
    // two parsers read differently must never pass.
    for (const char* good : {"example.org:443", "EXAMPLE.org:443", "a-b_c.example.:1", "x:65535", "127.0.0.1:443",
                             "255.255.255.255:443", "0.0.0.0:443", "123.example:443", "[::1]:443", "[2001:db8::1]:8443",
                             "[::ffff:127.0.0.1]:443", "[FE80::1]:443"}) {
        INFO(good);
        CHECK(spe::parse_connect_target(good));
    }
    auto v4 = spe::parse_connect_target("127.0.0.1:8443");
    REQUIRE(v4);
    CHECK(v4->host == "127.0.0.1");
    CHECK(v4->port == 8443);
    auto v6 = spe::parse_connect_target("[2001:db8::1]:443");
    REQUIRE(v6);
    CHECK(v6->host == "[2001:db8::1]");
    CHECK(v6->port == 443);
    for (const char* bad : {
             "",
             "127.0.0.1:22:443",         // two ports: Squid would connect to 22
             "localhost:22:443",         //
             "127.0.0.1:443:22",         //
             "[::1]:22:443",             //
             "user@127.0.0.1:443",       // userinfo
             "user:pw@example.org:443",  //
             "@example.org:443",         //
             "::1:443",                  // IPv6 without brackets
             "2001:db8::1",              //
             "::1",                      //
             "[::1]",                    // no port
             "[::1]:",                   //
             "[::1",                     // unterminated
             "[::1]443",                 //
             "[]:443",                   // empty
             "[zz::1]:443",              // not IPv6
             "[127.0.0.1]:443",          //
             "[v1.abc]:443",             // IPvFuture
             "[fe80::1%25eth0]:443",     // zone identifier
             "[fe80::1%eth0]:443",       //
             "x[::1]:443",               //
             "example.org:+443",         // sign
             "example.org:-1",           //
             "example.org: 443",         // whitespace
             "example.org:443 ",         //
             " example.org:443",         //
             "exa mple.org:443",         //
             "example.org\t:443",        //
             "example.org:0x1bb",        // not decimal
             "example.org:0443",         // leading zero: not every parser reads it as 443
             "example.org:00000",        //
             "exa%6dple.org:443",        // percent-encoding
             "127.0.0.1%3a22:443",       //
             "%31%32%37.0.0.1:443",      //
             "example.org/:443",         // other characters
             "example.org?:443",         //
             "example.org#:443",         //
             "exa!mple.org:443",         //
             "a,b:443",                  //
             "exa\x80mple.org:443",      //
             "127.1:443",                // IPv4 shorthand, octal, hex, overflow: resolvers differ
             "2130706433:443",           //
             "0177.0.0.1:443",           //
             "010.0.0.1:443",            //
             "0x7f.0.0.1:443",           //
             "0x7f000001:443",           //
             "127.0.0.256:443",          //
             "1.2.3.4.5:443",            //
             "1.2.3.:443",               //
         }) {
        INFO(bad);
        CHECK_FALSE(spe::parse_connect_target(bad));
    }
    CHECK_FALSE(spe::parse_connect_target(std::string(256, 'a') + ":443"));
    CHECK(spe::parse_connect_target(std::string(255, 'a') + ":443"));
}

TEST_CASE("a refused CONNECT target says why, and names the form expected") {
    const std::pair<const char*, const char*> cases[] = {
        {"127.0.0.1:22:443", "more than one ':'"},
        {"[::1]:22:443", "more than one port"},
        {"user@127.0.0.1:443", "userinfo"},
        {"::1:443", "must be in brackets"},
        {"[::1]", "no port"},
        {"example.org", "no port"},
        {":443", "no host"},
        {"example.org:+443", "from 1 to 65535"},
        {"exa%6dple.org:443", "percent-encoding"},
        {"a b:443", "whitespace"},
        {"a/b:443", "outside a host name"},
        {"127.1:443", "four decimal parts"},
        {"[zz]:443", "IPv6 address"},
    };
    for (const auto& [target, reason] : cases) {
        INFO(target);
        std::string why;
        CHECK_FALSE(spe::parse_connect_target(target, &why));
        CHECK_THAT(why, Catch::Contains(reason) && Catch::Contains("RFC 9110 9.3.6"));
    }
    std::string untouched = "unchanged";
    CHECK(spe::parse_connect_target("example.org:443", &untouched));
    CHECK(untouched == "unchanged");
}

TEST_CASE("a request in an intercepted tunnel: an http target with its port upstream, its https URL in the record") {
    const spe::ConnectTarget standard{"example.org", 443};
    auto t = spe::intercepted_target("/a/b?c=d", standard);
    REQUIRE(t);
    // The port stays written: http://example.org/a/b is another object in every cache.
    CHECK(t->upstream_target == "http://example.org:443/a/b?c=d");
    CHECK(t->url == "https://example.org/a/b?c=d");
    auto odd = spe::intercepted_target("/", spe::ConnectTarget{"[::1]", 8443});
    REQUIRE(odd);
    CHECK(odd->upstream_target == "http://[::1]:8443/");
    CHECK(odd->url == "https://[::1]:8443/");
    CHECK_FALSE(spe::intercepted_target("http://other.example/", standard));
    CHECK_FALSE(spe::intercepted_target("*", standard));
    CHECK_FALSE(spe::intercepted_target("", standard));
}
