// libFuzzer: bytes a proxy under test may answer with, through the proxy leg's
// own reply reading (session/proxy_reply.hpp: interim replies, the digesting
// body, header selection, error classification), over a stream that hands the
// input out in pieces as a socket would, the first piece already buffered as
// UpstreamConnection::send leaves it. Properties: no crash or sanitizer report;
// the capture prefix never exceeds the digested bytes; a whole reply has a
// final status and an MD5 and validates OK against itself; a failed one says
// why; no more interim replies recorded than the record keeps; the judge's
// X-SPE-Parent parser (a proxy sends back what it stored) gives a positive time;
// the leg's own parser measures the reply as Beast's response_parser did
// (tests/support/reply_parsers_compared.hpp), field by field.
// Asio's awaitable.hpp uses std::exchange without including <utility> (seen with clang 14).
#include <utility>

#include "http/header_policy.hpp"
#include "http/read_proxy_reply.hpp"
#include "judge/parent_stamp.hpp"
#include "judge/validator.hpp"
#include "reply_parsers_compared.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

using namespace std::chrono_literals;

/// The proxy's side of the connection: the input, `piece` bytes per read, then the end of the stream.
class PieceStream {
public:
    using executor_type = boost::asio::io_context::executor_type;

    PieceStream(executor_type ex, std::string_view input, std::size_t piece) : ex_(ex), rest_(input), piece_(piece) {}
    executor_type get_executor() noexcept { return ex_; }
    void expires_at(spe::Clock::time_point) {}  // the input never stalls: no deadline to keep

    /// The next piece into `buffer`, as UpstreamConnection::send's first read leaves it.
    void buffer_first(spe::ReadBuffer& buffer) {
        const auto n = boost::asio::buffer_copy(buffer.prepare(piece_), next());
        buffer.commit(n);
        rest_.remove_prefix(n);
    }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
        return boost::asio::async_initiate<Token, void(spe::error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& b) {
                spe::error_code ec;
                std::size_t n = 0;
                if (rest_.empty())
                    ec = boost::asio::error::eof;
                else
                    rest_.remove_prefix(n = boost::asio::buffer_copy(b, next()));
                auto ex = boost::asio::get_associated_executor(handler, ex_);
                boost::asio::post(ex, [h = std::move(handler), ec, n]() mutable { std::move(h)(ec, n); });
            },
            token, buffers);
    }

private:
    boost::asio::const_buffer next() const { return boost::asio::buffer(rest_.data(), std::min(piece_, rest_.size())); }

    executor_type ex_;
    std::string_view rest_;
    std::size_t piece_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    const bool head = data[1] & 1;
    const std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);
    if (input.empty()) return 0;  // send() fails before any reply byte: never read

    static const spe::HeaderPolicy policy;
    spe::ProxyLegLimits limits{1s, std::nullopt, 16 * 1024, 64, true};
    if (data[1] & 2) limits.body_cap = 16;  // the sequential mode's cut at the reference's length

    static boost::asio::io_context ioc;
    PieceStream stream(ioc.get_executor(), input, piece);
    spe::ReadBuffer buffer(16 * 1024 + 64 * 1024);
    stream.buffer_first(buffer);
    spe::Measure m;
    std::optional<spe::ReplyEnd> end;
    const auto started = spe::Clock::now();
    boost::asio::co_spawn(ioc, spe::read_proxy_reply(stream, buffer, m, head, limits, policy, started, started + 1s),
                          [&](std::exception_ptr e, spe::ReplyEnd r) {
                              if (e) std::abort();
                              end = r;
                          });
    ioc.restart();
    ioc.run();
    if (!end) std::abort();  // the input ends, so the read does

    if (m.body_head.size() > 64 || m.body_head.size() > m.bytes) std::abort();
    if (m.interim.size() > spe::kMaxInterims) std::abort();
    if (m.header_bytes > input.size()) std::abort();
    if (end->whole != (m.error == spe::LegError::none)) std::abort();
    if (!end->whole && m.error_detail.empty()) std::abort();
    if (end->whole) {
        // A final status, as the leg reads one: 101 or 200 and up. A status below 100 is malformed to
        // both legs (tests/fuzz/corpus/reply/status_below_100, once final here and interim to the Collector leg).
        if (!m.md5 || !m.status || *m.status < 100 || (*m.status < 200 && *m.status != 101)) std::abort();
        spe::ProxyResult same{"p", m, spe::ResultClass::no_response, {}};
        spe::validate(m, same);
        if (same.result != spe::ResultClass::ok || !same.mismatched_headers.empty()) std::abort();
    } else if (m.md5) {
        std::abort();  // a reply cut short has no digest to compare
    }
    if (const auto parent = m.cache_headers.parent())
        if (const auto stamp = spe::parse_parent_stamp(*parent); stamp && !(stamp->time > 0)) std::abort();
    using spe::test::parse_reply;
    if (const auto d = spe::test::first_difference(parse_reply<spe::test::BeastParser>(input, piece, head, limits),
                                                   parse_reply<spe::ProxyReplyParser>(input, piece, head, limits));
        !d.empty()) {
        std::fprintf(stderr, "the parsers differ in %s\n", d.c_str());
        std::abort();
    }
    return 0;
}
