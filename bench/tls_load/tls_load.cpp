// spe-tls-load: an HTTPS load generator for the benchmarks, through an HTTP proxy.
//
// wrk cannot send CONNECT, and the Python clients are too slow to load the
// Multiplier, so the HTTPS benchmark (bench/https.py) uses this: C closed-loop
// connections, each one CONNECT through --proxy to --target, a TLS handshake
// (SNI and verification against --cafile), then GET --path back to back on the
// kept-alive connection (or, with --new-connection, a new CONNECT and handshake
// for every request), for --seconds. Without --proxy it connects to --target
// itself. Prints one JSON object: requests, errors, requests/s, latency
// percentiles (µs, per request, handshake included with --new-connection).
// One thread: one client core, like wrk -t1 in the other benchmarks.
#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without including it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace po = boost::program_options;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string proxy;  // empty: straight to the target
    std::string target_host;
    std::string target_port;
    std::string path = "/";
    std::string cafile;
    unsigned connections = 1;
    double seconds = 5;
    bool new_connection = false;
    bool unique_hosts = false;       // each new connection names a host never seen: a new leaf certificate each
    bool plain = false;              // plain HTTP through the proxy (absolute-form), the side-by-side figure
    std::uint64_t max_requests = 0;  // 0: no bound
};

struct Totals {
    std::uint64_t requests = 0;
    std::uint64_t started = 0;
    std::uint64_t errors = 0;
    std::uint64_t handshakes = 0;
    std::uint64_t hosts = 0;
    std::string last_error;
    std::vector<std::uint32_t> latency_us;
};

std::pair<std::string, std::string> split_hostport(const std::string& text) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw std::invalid_argument("expected HOST:PORT, got " + text);
    return {text.substr(0, colon), text.substr(colon + 1)};
}

using TlsStream = asio::ssl::stream<beast::tcp_stream>;

/// A TCP connection to the proxy (or the target), no delay, under a 10 s deadline.
asio::awaitable<void> connect_tcp(const Options& o, beast::tcp_stream& stream) {
    tcp::resolver resolver(co_await asio::this_coro::executor);
    const auto [host, port] = o.proxy.empty() ? std::pair{o.target_host, o.target_port} : split_hostport(o.proxy);
    stream.expires_after(std::chrono::seconds(10));
    co_await stream.async_connect(co_await resolver.async_resolve(host, port, asio::use_awaitable),
                                  asio::use_awaitable);
    stream.socket().set_option(tcp::no_delay(true));
}

/// Connected to the proxy, CONNECTed to host:port, then TLS for host: ready for requests.
asio::awaitable<std::unique_ptr<TlsStream>> open_tls(const Options& o, const std::string& host, asio::ssl::context& tls,
                                                     Totals& totals) {
    auto stream = std::make_unique<TlsStream>(beast::tcp_stream(co_await asio::this_coro::executor), tls);
    auto& tcp_stream = beast::get_lowest_layer(*stream);
    co_await connect_tcp(o, tcp_stream);
    if (!o.proxy.empty()) {
        const auto authority = host + ":" + o.target_port;
        http::request<http::empty_body> connect{http::verb::connect, authority, 11};
        connect.set(http::field::host, authority);
        co_await http::async_write(tcp_stream, connect, asio::use_awaitable);
        beast::flat_buffer buffer;
        http::response_parser<http::empty_body> parser;
        parser.skip(true);  // a 200 to CONNECT has no body: TLS starts right after it
        co_await http::async_read_header(tcp_stream, buffer, parser, asio::use_awaitable);
        if (parser.get().result() != http::status::ok)
            throw std::runtime_error("CONNECT refused: " + std::to_string(parser.get().result_int()));
    }
    // SSL_set_tlsext_host_name, without the macro's C cast
    if (SSL_ctrl(stream->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(host.c_str())) != 1)
        throw std::runtime_error("cannot set SNI");
    stream->set_verify_callback(asio::ssl::host_name_verification(host));
    co_await stream->async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
    ++totals.handshakes;
    co_return stream;
}

bool more(const Options& o, Clock::time_point end, Totals& totals) {
    if (Clock::now() >= end || (o.max_requests && totals.started >= o.max_requests)) return false;
    ++totals.started;
    return true;
}

/// One request on `stream` (opened first by `open` when there is none or --new-connection).
template <class Stream, class Open>
asio::awaitable<void> closed_loop(const Options& o, Clock::time_point end, Totals& totals, Open open,
                                  http::request<http::empty_body>& req) {
    std::unique_ptr<Stream> stream;
    beast::flat_buffer buffer;
    while (more(o, end, totals)) {
        const auto t0 = Clock::now();
        try {
            if (!stream || o.new_connection) {
                stream.reset();
                buffer.clear();
                stream = co_await open();
            }
            beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(10));
            co_await http::async_write(*stream, req, asio::use_awaitable);
            http::response<http::string_body> res;
            co_await http::async_read(*stream, buffer, res, asio::use_awaitable);
            if (res.result() != http::status::ok)
                throw std::runtime_error("status " + std::to_string(res.result_int()));
            ++totals.requests;
            totals.latency_us.push_back(static_cast<std::uint32_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count()));
            if (!res.keep_alive()) stream.reset();
        } catch (const std::exception& e) {
            ++totals.errors;
            totals.last_error = e.what();
            stream.reset();
        }
    }
}

asio::awaitable<void> tls_client(const Options& o, asio::ssl::context& tls, Clock::time_point end, Totals& totals) {
    http::request<http::empty_body> req{http::verb::get, o.path, 11};
    req.set(http::field::user_agent, "spe-tls-load");
    auto open = [&]() -> asio::awaitable<std::unique_ptr<TlsStream>> {
        const auto host = o.unique_hosts ? "c" + std::to_string(++totals.hosts) + "." + o.target_host : o.target_host;
        req.set(http::field::host, host + ":" + o.target_port);
        co_return co_await open_tls(o, host, tls, totals);
    };
    co_await closed_loop<TlsStream>(o, end, totals, open, req);
}

asio::awaitable<void> plain_client(const Options& o, Clock::time_point end, Totals& totals) {
    const auto authority = o.target_host + ":" + o.target_port;
    http::request<http::empty_body> req{http::verb::get, o.proxy.empty() ? o.path : "http://" + authority + o.path, 11};
    req.set(http::field::host, authority);
    req.set(http::field::user_agent, "spe-tls-load");
    auto open = [&]() -> asio::awaitable<std::unique_ptr<beast::tcp_stream>> {
        auto stream = std::make_unique<beast::tcp_stream>(co_await asio::this_coro::executor);
        co_await connect_tcp(o, *stream);
        co_return stream;
    };
    co_await closed_loop<beast::tcp_stream>(o, end, totals, open, req);
}

std::uint32_t percentile(const std::vector<std::uint32_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(i, sorted.size() - 1)];
}

std::optional<Options> parse(int argc, char** argv) {
    Options o;
    std::string target;
    po::options_description d("spe-tls-load options");
    auto add = d.add_options();
    add("help", "this help");
    add("proxy", po::value(&o.proxy), "HOST:PORT of the HTTP proxy (CONNECT); without it, straight to --target");
    add("target", po::value(&target)->required(), "HOST:PORT of the HTTPS server (SNI and verification: HOST)");
    add("path", po::value(&o.path), "path to GET (default /)");
    add("cafile", po::value(&o.cafile), "CA file the server's certificate must verify against (not with --plain)");
    add("connections", po::value(&o.connections), "closed-loop connections (default 1)");
    add("seconds", po::value(&o.seconds), "how long (default 5)");
    add("max-requests", po::value(&o.max_requests), "stop after this many requests (default: no bound)");
    add("new-connection", po::bool_switch(&o.new_connection), "a new connection (CONNECT, handshake) per request");
    add("unique-hosts", po::bool_switch(&o.unique_hosts),
        "each new connection to c<N>.HOST, a name never used before (a new leaf certificate each)");
    add("plain", po::bool_switch(&o.plain), "plain HTTP instead (absolute-form through the proxy)");
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, d), vm);
    if (vm.count("help")) {
        std::cout << d << "\n";
        return std::nullopt;
    }
    po::notify(vm);
    std::tie(o.target_host, o.target_port) = split_hostport(target);
    if (!o.plain && o.cafile.empty()) throw std::invalid_argument("--cafile is required (except with --plain)");
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        auto options = parse(argc, argv);
        if (!options) return 0;
        asio::io_context ioc(1);
        asio::ssl::context tls(asio::ssl::context::tls_client);
        if (!options->plain) {
            tls.load_verify_file(options->cafile);
            tls.set_verify_mode(asio::ssl::verify_peer);
        }
        // No session resumption: with --new-connection every request pays a full handshake.
        Totals totals;
        const auto start = Clock::now();
        const auto end =
            start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options->seconds));
        for (unsigned i = 0; i < options->connections; ++i) {
            if (options->plain)
                asio::co_spawn(ioc, plain_client(*options, end, totals), asio::detached);
            else
                asio::co_spawn(ioc, tls_client(*options, tls, end, totals), asio::detached);
        }
        ioc.run();
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        std::sort(totals.latency_us.begin(), totals.latency_us.end());
        nlohmann::json out = {{"requests", totals.requests},
                              {"errors", totals.errors},
                              {"handshakes", totals.handshakes},
                              {"seconds", elapsed},
                              {"rps", static_cast<double>(totals.requests) / elapsed},
                              {"p50_us", percentile(totals.latency_us, 0.5)},
                              {"p90_us", percentile(totals.latency_us, 0.9)},
                              {"p99_us", percentile(totals.latency_us, 0.99)},
                              {"last_error", totals.last_error}};
        std::cout << out.dump() << "\n";
        return totals.requests > 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "spe-tls-load: " << e.what() << "\n";
        return 2;
    }
}
