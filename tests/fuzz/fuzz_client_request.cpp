// libFuzzer: bytes a client may send, through the Multiplier's request handling.
// Property checked beyond "no crash, no sanitizer report": whatever the
// Multiplier would forward upstream parses back as exactly one well-formed
// request with the same method, target and body (no smuggling through us).
#include "core/config.hpp"
#include "http/request_policy.hpp"

#include <boost/beast/http.hpp>

#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace http = boost::beast::http;

namespace {

const spe::Config& config() {
    static const spe::Config c = [] {
        spe::Config cfg;
        cfg.max_header_bytes = 16 * 1024;
        cfg.max_request_body = 64 * 1024;
        return cfg;
    }();
    return c;
}

/// Feeds `data` to the parser in pieces of `piece` bytes, as reads would.
bool parse(http::request_parser<http::string_body>& p, const char* data, std::size_t size, std::size_t piece) {
    boost::beast::error_code ec;
    std::string pending;
    for (std::size_t off = 0; off < size && !p.is_done(); off += piece) {
        pending.append(data + off, std::min(piece, size - off));
        auto used = p.put(boost::asio::buffer(pending), ec);
        if (ec == http::error::need_more) ec = {};
        if (ec) return false;
        pending.erase(0, used);
    }
    if (!p.is_done() && p.need_eof()) p.put_eof(ec);
    return !ec && p.is_done();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    const auto* text = reinterpret_cast<const char*>(data + 1);
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(config().max_header_bytes));
    parser.body_limit(config().max_request_body);
    if (!parse(parser, text, size - 1, piece)) return 0;
    spe::Request req = parser.release();
    (void)spe::is_validation(req);
    const bool keep_alive = spe::client_wants_keep_alive(req);
    if (req.method() == http::verb::connect || spe::check_request(req, config())) return 0;

    const auto upstream = spe::make_upstream_request(req, "spe-multiplier-8080", keep_alive);
    std::ostringstream wire;
    wire << upstream;
    const std::string bytes = wire.str();

    http::request_parser<http::string_body> again;
    again.header_limit(1 << 20);
    again.body_limit(1 << 20);
    boost::beast::error_code ec;
    const auto used = again.put(boost::asio::buffer(bytes), ec);
    if (ec && ec != http::error::need_more) std::abort();  // we would forward something unparsable
    if (!again.is_done()) {
        // A body follows the header in the serialized text: feed the rest.
        again.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    }
    const auto& back = again.get();
    if (ec || !again.is_done() || back.method_string() != req.method_string() || back.target() != req.target() ||
        back.body() != req.body() || back.count(http::field::transfer_encoding) != 0)
        std::abort();  // forwarded request differs from the one accepted
    return 0;
}
