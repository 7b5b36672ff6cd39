// libFuzzer: bytes a proxy under test may answer with, through the Multiplier's
// reply measuring (digesting body, header selection, validation). Properties:
// no crash or sanitizer report; the digest counts exactly the decoded bytes;
// validation of a complete reply against itself is OK; the judge's X-SPE-Parent
// parser (a proxy sends back what it stored) never crashes and gives a positive time.
#include "http/digest_body.hpp"
#include "http/header_policy.hpp"
#include "http/reply_header.hpp"
#include "judge/cache_facts.hpp"
#include "judge/parent_stamp.hpp"
#include "judge/validator.hpp"

#include <boost/beast/http.hpp>

#include <cstdint>
#include <cstdlib>

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    const bool head = data[1] & 1;
    const auto* text = reinterpret_cast<const char*>(data + 2);
    const std::size_t len = size - 2;

    http::response_parser<spe::DigestBody> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(std::uint64_t{1} << 20);
    parser.skip(head);
    parser.get().body().head_limit = 64;
    boost::beast::error_code ec;
    std::string pending;
    for (std::size_t off = 0; off < len && !parser.is_done() && !ec; off += piece) {
        pending.append(text + off, std::min(piece, len - off));
        const auto used = parser.put(boost::asio::buffer(pending), ec);
        if (ec == http::error::need_more) ec = {};
        pending.erase(0, used);
    }
    if (!ec && !parser.is_done() && parser.is_header_done() && parser.need_eof()) parser.put_eof(ec);
    if (!parser.is_header_done()) return 0;

    const auto cache = spe::take_cache_headers(parser.get().base());
    if (const auto parent = cache.parent())
        if (const auto stamp = spe::parse_parent_stamp(*parent); stamp && !(stamp->time > 0)) std::abort();

    static const spe::HeaderPolicy policy;
    spe::Measure m;
    m.status = parser.get().result_int();
    m.headers = policy.select(parser.get().base());
    auto& body = parser.get().body();
    m.bytes = body.digest.bytes();
    if (body.head.size() > 64 || body.head.size() > m.bytes) std::abort();
    if (!ec && parser.is_done()) {
        m.md5 = body.digest.hex_final();
        spe::ProxyResult same{"p", m, spe::ResultClass::no_response, {}};
        spe::validate(m, same);
        if (same.result != spe::ResultClass::ok || !same.mismatched_headers.empty()) std::abort();
    }
    return 0;
}
