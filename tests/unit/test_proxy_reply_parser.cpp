// The proxy reply parser (http/proxy_reply_parser.hpp) against Beast's
// response_parser, which the proxy leg read its replies with before: the same
// replies, handed over in the same pieces, read the same way, give the same
// measure, field by field, the same error, the same bytes consumed and the
// same keep-alive answer (tests/support/reply_parsers_compared.hpp).
#include "http/kept_text.hpp"
#include "http/md5_digest.hpp"
#include "reply_parsers_compared.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace std::chrono_literals;
using spe::test::BeastParser;
using spe::test::parse_reply;

/// Header lines, each ended with CRLF, and the empty line that ends the header.
std::string header(std::initializer_list<std::string_view> lines) {
    std::string out;
    for (const auto line : lines)
        out.append(line).append("\r\n");
    return out + "\r\n";
}

struct Reply {
    std::string name;
    std::string bytes;
    bool head = false;
};

std::vector<Reply> corpus() {
    std::string many_fields;  // more fields than either parser keeps in place, and a header past 2 KiB
    for (int i = 0; i < 40; ++i)
        many_fields +=
            "X-Field-" + std::to_string(i) + ": " + std::string(60, static_cast<char>('a' + i % 26)) + "\r\n";
    std::string judged_repeats;  // more judged values than a header usually has, repeats apart
    for (int i = 0; i < 20; ++i)
        judged_repeats += "Age: " + std::to_string(i) + "\r\nX-Cache: HIT " + std::to_string(i) + "\r\n";
    return {
        {"a plain reply", header({"HTTP/1.1 200 OK", "Content-Type: text/plain", "Content-Length: 5"}) + "hello"},
        {"repeated fields, a repeat after another field",
         header({"HTTP/1.1 200 OK", "Set-Cookie: a=1", "Cache-Control: max-age=60", "Set-Cookie: b=2", "Vary: Accept",
                 "cache-control: public", "VARY: Cookie", "Content-Length: 0"})},
        {"names in mixed case, known and unknown",
         header({"HTTP/1.1 200 OK", "cOnTeNt-TyPe: text/html", "ETAG: \"e\"", "x-CUSTOM: 1", "X-Custom: 2",
                 "Last-modified: Mon, 01 Jan 2024 00:00:00 GMT", "content-length: 3"}) +
             "abc"},
        {"unknown names",
         header({"HTTP/1.1 200 OK", "Foo-Bar: baz", "X-Whatever: 1", "Zzz: last", "Aaa: first", "Content-Length: 0"})},
        {"the SPE fields, first fetch stamp and refusal taken",
         header({"HTTP/1.1 502 Bad Gateway", "X-SPE-Fetch: collector-fetch-12", "x-spe-fetch: collector-fetch-13",
                 "X-SPE-Replay-Refused: body differs", "X-SPE-REPLAY-REFUSED: again",
                 "X-SPE-Validated: collector-fetch-9", "X-SPE-Reply-To: 0123-7",
                 "X-SPE-Parent: t=1.000; fields=\"etag\"", "Cache-Status: squid; hit", "X-Cache: MISS from a",
                 "x-cache: HIT from b", "X-Cache-Lookup: HIT", "Content-Length: 0"})},
        {"the judged fields", header({"HTTP/1.1 200 OK", "Date: Mon, 01 Jan 2024 00:00:00 GMT", "Age: 3", "Expires: 0",
                                      "Content-Encoding: gzip", "Set-Cookie: s=1",
                                      "Cache-Control: no-cache=\"set-cookie\"", "Content-Length: 0"})},
        {"empty values and whitespace around values",
         header({"HTTP/1.1 200 OK", "X-Empty:", "ETag:   ", "X-Spaced: \t  a  b \t ", "Vary:", "Content-Length: 0"})},
        {"obs-fold", header({"HTTP/1.1 200 OK", "X-Folded: first", "  second", "\tthird", "Cache-Control: max-age=1,",
                             " public", "Content-Length: 0"})},
        {"chunked, with extensions and trailers",
         header({"HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "ETag: \"c\""}) +
             "5;ext=1\r\nhello\r\n3\r\n, w\r\n0\r\nX-Trailer: t\r\n\r\n"},
        {"interim replies, then the final one",
         header({"HTTP/1.1 100 Continue"}) + header({"HTTP/1.1 103 Early Hints", "Link: </a.css>; rel=preload"}) +
             header({"HTTP/1.1 200 OK", "Content-Length: 2", "X-A: 1"}) + "ok"},
        {"interim replies, then the end of the stream", header({"HTTP/1.1 102 Processing"})},
        {"a reply to HEAD: no body read", header({"HTTP/1.1 200 OK", "Content-Length: 100", "ETag: \"h\""}), true},
        {"204 and its length", header({"HTTP/1.1 204 No Content", "Content-Length: 10"})},
        {"304", header({"HTTP/1.1 304 Not Modified", "ETag: \"n\"", "Date: Mon, 01 Jan 2024 00:00:00 GMT"})},
        {"a body to the end of the stream", header({"HTTP/1.1 200 OK", "X-A: 1"}) + "until the end"},
        {"HTTP/1.0, no Connection", header({"HTTP/1.0 200 OK", "Content-Length: 1"}) + "x"},
        {"HTTP/1.0, Connection: Keep-Alive",
         header({"HTTP/1.0 200 OK", "Connection: Keep-Alive", "Content-Length: 1"}) + "x"},
        {"Connection: close, then keep-alive (the first counts)",
         header({"HTTP/1.1 200 OK", "Connection: Close", "Connection: keep-alive", "Content-Length: 1"}) + "x"},
        {"Connection: a list", header({"HTTP/1.1 200 OK", "Connection: Upgrade, CLOSE", "Content-Length: 0"})},
        {"an empty reason", header({"HTTP/1.1 404 ", "Content-Length: 0"})},
        {"an empty reason of an unknown status", header({"HTTP/1.1 299 ", "Content-Length: 0"})},
        {"a reason with spaces", header({"HTTP/1.1 500 Something  Went Wrong ", "Content-Length: 0"})},
        {"a status below 100", header({"HTTP/1.1 099 Low", "Content-Length: 0"})},
        {"a length past the body cap", header({"HTTP/1.1 200 OK", "ETag: \"big\"", "Content-Length: 1000"}) + "x"},
        {"a chunk past the body cap", header({"HTTP/1.1 200 OK", "Transfer-Encoding: chunked"}) + "400\r\n" +
                                          std::string(1024, 'b') + "\r\n0\r\n\r\n"},
        {"a body cut short", header({"HTTP/1.1 200 OK", "Content-Length: 10", "X-A: 1"}) + "short"},
        {"a header cut short", "HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B: "},
        {"a malformed field", "HTTP/1.1 200 OK\r\nX-A: 1\r\nBad Name: 2\r\n\r\n"},
        {"a malformed status line", "HTTP/1.1 2x0 OK\r\n\r\n"},
        {"a bad chunk", header({"HTTP/1.1 200 OK", "Transfer-Encoding: chunked"}) + "zz\r\n"},
        {"many fields, a long header",
         "HTTP/1.1 200 OK\r\n" + many_fields + "Set-Cookie: z=1\r\nContent-Length: 4\r\n\r\nbody"},
        {"judged fields repeated, each apart from its others", "HTTP/1.1 200 OK\r\n" + judged_repeats + "\r\n"},
        {"a header over the limit", "HTTP/1.1 200 OK\r\nX-Big: " + std::string(20 * 1024, 'x') + "\r\n\r\n"},
        {"nothing at all", ""},
        {"bytes after the reply",
         header({"HTTP/1.1 200 OK", "Content-Length: 1"}) + "x" + header({"HTTP/1.1 200 OK", "Content-Length: 0"})},
    };
}

}  // namespace

TEST_CASE("the proxy reply parser measures every reply as Beast's response_parser did") {
    const spe::ProxyLegLimits capped{1s, 16, 16 * 1024, 64, true};
    const spe::ProxyLegLimits uncapped{1s, std::nullopt, 16 * 1024, 64, true};
    for (const auto& reply : corpus())
        for (const auto& limits : {uncapped, capped})
            for (const std::size_t piece :
                 {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{64}, std::size_t{1} << 20}) {
                INFO(reply.name << ", pieces of " << piece << (limits.body_cap ? ", body cap 16" : ""));
                CHECK(spe::test::first_difference(
                          parse_reply<BeastParser>(reply.bytes, piece, reply.head, limits),
                          parse_reply<spe::ProxyReplyParser>(reply.bytes, piece, reply.head, limits)) == "");
            }
}

TEST_CASE("the proxy reply parser keeps the header whole when it came in pieces") {
    const spe::ProxyLegLimits limits{1s, std::nullopt, 16 * 1024, 64, true};
    const auto reply = header({"HTTP/1.1 200 OK", "X-Folded: a", " b", "Set-Cookie: c=1", "Content-Length: 2"}) + "hi";
    const auto out = parse_reply<spe::ProxyReplyParser>(reply, 1, false, limits);
    CHECK(out.m.raw_header == "HTTP/1.1 200 OK\r\nX-Folded: a b\r\nSet-Cookie: c=1\r\nContent-Length: 2\r\n\r\n");
    CHECK(out.m.cache_headers.field_names == spe::FieldNameSet::of("x-folded set-cookie content-length"));
    CHECK(out.m.cache_headers.set_cookie);
    CHECK(out.m.bytes == 2);
    CHECK(out.keep_alive);
}

TEST_CASE("kept text stays where it was kept when more comes than its own block holds") {
    spe::KeptText kept;
    std::vector<std::pair<std::string, std::string_view>> copies;
    for (int i = 0; i < 100; ++i) {
        auto s = std::string(90, static_cast<char>('a' + i % 26)) + std::to_string(i);
        if (i == 50) s = std::string(10000, 'x');  // longer than a heap block
        copies.emplace_back(s, kept.keep(s));
    }
    copies.emplace_back("", kept.keep(""));
    for (const auto& [original, copy] : copies)
        CHECK(copy == original);
}

TEST_CASE("a reply of another status than the reference's is read whole; the reference's length cuts its own status") {
    // Sequential mode after a 304 from the Collector: cut at its 0 bytes, but only a 304.
    spe::ProxyLegLimits limits{1s, 0, 16 * 1024, 64, true};
    limits.capped_status = 304;
    limits.other_status_cap = 1 << 20;
    const std::string body(5000, 'b');
    const std::vector<std::string> replies = {
        header({"HTTP/1.1 200 OK", "Content-Length: 5000"}) + body,
        header({"HTTP/1.1 200 OK", "Transfer-Encoding: chunked"}) + "1388\r\n" + body + "\r\n0\r\n\r\n"};
    for (const auto& reply : replies)
        for (const std::size_t piece : {std::size_t{7}, std::size_t{1} << 20}) {
            INFO(reply.substr(0, 40) << ", pieces of " << piece);
            const auto out = parse_reply<spe::ProxyReplyParser>(reply, piece, false, limits);
            CHECK(out.m.error == spe::LegError::none);
            CHECK(out.m.status == 200u);
            CHECK(out.m.bytes == body.size());
            CHECK(out.m.md5 == spe::md5_hex(body.data(), body.size()));
            CHECK(out.keep_alive);
        }
    SECTION("--max-proxy-body still bounds it") {
        limits.other_status_cap = 4999;
        for (const auto& reply : replies)
            CHECK(parse_reply<spe::ProxyReplyParser>(reply, 64, false, limits).m.error ==
                  spe::LegError::body_too_large);
    }
    SECTION("a reply of the reference's status is cut at the reference's length") {
        limits.capped_status = 200;
        limits.body_cap = 10;
        for (const auto& reply : replies)
            CHECK(parse_reply<spe::ProxyReplyParser>(reply, 64, false, limits).m.error ==
                  spe::LegError::body_too_large);
    }
}
