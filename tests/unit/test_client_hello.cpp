#include "tls/client_hello.hpp"

#include <openssl/ssl.h>
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using Status = spe::ClientHelloScan::Status;

/// The first flight of an OpenSSL client (its ClientHello records), as a real client sends it.
std::string openssl_hello(const char* sni, const char* ciphers = nullptr, const char* alpn = nullptr) {
    std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (ciphers) SSL_CTX_set_cipher_list(ctx.get(), ciphers);
    if (alpn) {
        const std::string wire = std::string(1, static_cast<char>(std::char_traits<char>::length(alpn))) + alpn;
        SSL_CTX_set_alpn_protos(ctx.get(), reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size()));
    }
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl.get(), in, out);  // ssl owns both
    // SSL_set_tlsext_host_name without its C cast
    if (sni) SSL_ctrl(ssl.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(sni));
    SSL_set_connect_state(ssl.get());
    SSL_do_handshake(ssl.get());  // wants to read: the ClientHello is written
    std::string bytes(static_cast<std::size_t>(BIO_pending(out)), '\0');
    BIO_read(out, bytes.data(), static_cast<int>(bytes.size()));
    return bytes;
}

std::string u8(unsigned v) {
    return std::string(1, static_cast<char>(v & 0xff));
}
std::string u16(unsigned v) {
    return u8(v >> 8) + u8(v);
}
std::string u24(unsigned v) {
    return u8(v >> 16) + u16(v);
}
std::string vec8(const std::string& s) {
    return u8(static_cast<unsigned>(s.size())) + s;
}
std::string vec16(const std::string& s) {
    return u16(static_cast<unsigned>(s.size())) + s;
}

/// A hand-made ClientHello: these cipher suites and extensions (type, contents), in this order.
struct Hello {
    std::vector<unsigned> ciphers{0x1301, 0x1302, 0xc02f};
    std::vector<std::pair<unsigned, std::string>> extensions;

    std::string body() const {
        std::string suites, exts;
        for (unsigned c : ciphers)
            suites += u16(c);
        for (const auto& [type, data] : extensions)
            exts += u16(type) + vec16(data);
        return u16(0x0303) + std::string(32, 'r') + vec8(std::string(32, 's')) + vec16(suites) + vec8(u8(0)) +
               vec16(exts);
    }
    std::string handshake() const {
        const auto b = body();
        return u8(1) + u24(static_cast<unsigned>(b.size())) + b;
    }
    /// The handshake message in TLS records of at most `record` bytes each.
    std::string records(std::size_t record = 16384) const {
        const auto h = handshake();
        std::string out;
        for (std::size_t at = 0; at < h.size(); at += record) {
            const auto chunk = h.substr(at, record);
            out += u8(22) + u16(0x0301) + vec16(chunk);
        }
        return out;
    }
};

std::string sni_extension(const std::string& name) {
    return vec16(u8(0) + vec16(name));
}

Hello typical() {
    Hello h;
    h.extensions = {{0, sni_extension("www.example.org")},
                    {10, vec16(u16(29) + u16(23))},
                    {16, vec16(vec8("h2") + vec8("http/1.1"))},
                    {43, vec8(u16(0x0304) + u16(0x0303))},
                    {51, vec16(u16(29) + vec16(std::string(32, 'k')))}};
    return h;
}

spe::ClientHelloScan scan(const std::string& bytes) {
    return spe::scan_client_hello(bytes);
}

}  // namespace

TEST_CASE("a real ClientHello gives its SNI and a fingerprint of the client's TLS stack") {
    const auto bytes = openssl_hello("www.bank.example");
    const auto s = scan(bytes);
    REQUIRE(s.status == Status::complete);
    CHECK(s.hello.sni == "www.bank.example");
    CHECK(s.hello.fingerprint.size() == 16);
    CHECK(s.hello.fingerprint.find_first_not_of("0123456789abcdef") == std::string::npos);
    // Another connection of the same client (new random, key share, session id), another host: the same stack.
    const auto again = scan(openssl_hello("shop.example"));
    REQUIRE(again.status == Status::complete);
    CHECK(again.hello.sni == "shop.example");
    CHECK(again.hello.fingerprint == s.hello.fingerprint);
    // Another make of client (its cipher suites, its ALPN): another fingerprint.
    const auto ciphers = scan(openssl_hello("www.bank.example", "ECDHE-RSA-AES128-GCM-SHA256"));
    const auto alpn = scan(openssl_hello("www.bank.example", nullptr, "http/1.1"));
    CHECK(ciphers.hello.fingerprint != s.hello.fingerprint);
    CHECK(alpn.hello.fingerprint != s.hello.fingerprint);
    CHECK(alpn.hello.fingerprint != ciphers.hello.fingerprint);
    // No SNI (a client that CONNECTs by address and sends none).
    const auto anonymous = scan(openssl_hello(nullptr));
    REQUIRE(anonymous.status == Status::complete);
    CHECK(anonymous.hello.sni.empty());
}

TEST_CASE("a ClientHello read in pieces asks for the rest: the record header, then the record") {
    const auto bytes = openssl_hello("www.example.org");
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        INFO(n);
        const auto s = scan(bytes.substr(0, n));
        REQUIRE(s.status == Status::need_more);
        CHECK(s.wanted > n);
        CHECK(s.wanted <= bytes.size());
    }
    CHECK(scan(bytes.substr(0, 3)).wanted == 5);
    CHECK(scan(bytes.substr(0, 5)).wanted == bytes.size());  // one record
    // Bytes after it (TLS 1.3 early data) change nothing.
    CHECK(scan(bytes + "\x17\x03\x03").hello.sni == "www.example.org");
}

TEST_CASE("a ClientHello split over several records is reassembled") {
    const Hello h = typical();
    const auto whole = scan(h.records());
    REQUIRE(whole.status == Status::complete);
    for (std::size_t record : {1, 3, 50}) {
        INFO(record);
        const auto bytes = h.records(record);
        const auto split = scan(bytes);
        REQUIRE(split.status == Status::complete);
        CHECK(split.hello.sni == "www.example.org");
        CHECK(split.hello.fingerprint == whole.hello.fingerprint);
        CHECK(scan(bytes.substr(0, bytes.size() - 1)).status == Status::need_more);
    }
}

TEST_CASE("the fingerprint ignores GREASE, the extensions' order and what changes between connections") {
    const Hello h = typical();
    const auto base = scan(h.records()).hello.fingerprint;
    Hello greased = h;  // RFC 8701 values, Chrome's on every connection and different each time
    greased.ciphers.insert(greased.ciphers.begin(), 0x3a3a);
    greased.extensions.insert(greased.extensions.begin(), {0xdada, ""});
    greased.extensions[2].second = vec16(u16(0x8a8a) + u16(29) + u16(23));
    CHECK(scan(greased.records()).hello.fingerprint == base);
    Hello shuffled = h;  // Chrome permutes its extensions
    std::swap(shuffled.extensions[0], shuffled.extensions[3]);
    std::swap(shuffled.extensions[1], shuffled.extensions[4]);
    CHECK(scan(shuffled.records()).hello.fingerprint == base);
    Hello resumed = h;  // padding, a resumption's early_data and pre_shared_key (last)
    resumed.extensions.push_back({21, std::string(100, '\0')});
    resumed.extensions.push_back({42, ""});
    resumed.extensions.push_back({41, vec16(vec16("ticket") + u16(0) + u16(0)) + vec16(vec8("binder"))});
    CHECK(scan(resumed.records()).hello.fingerprint == base);
    // What a stack sends the same way every time does count.
    Hello other_groups = h;
    other_groups.extensions[1].second = vec16(u16(23) + u16(29));
    CHECK(scan(other_groups.records()).hello.fingerprint != base);
    Hello other_ciphers = h;
    std::swap(other_ciphers.ciphers[0], other_ciphers.ciphers[1]);
    CHECK(scan(other_ciphers.records()).hello.fingerprint != base);
    Hello fewer_extensions = h;
    fewer_extensions.extensions.pop_back();
    CHECK(scan(fewer_extensions.records()).hello.fingerprint != base);
}

TEST_CASE("what is not a well-formed ClientHello is left to the TLS library") {
    CHECK(scan("GET / HTTP/1.1\r\nHost: x\r\n\r\n").status == Status::not_client_hello);
    CHECK(scan(u8(22) + u16(0x0301) + u16(0)).status == Status::not_client_hello);      // empty record
    CHECK(scan(u8(22) + u16(0x0301) + u16(40000)).status == Status::not_client_hello);  // record too long
    Hello server_hello = typical();
    auto bytes = server_hello.records();
    bytes[5] = 2;  // handshake type ServerHello
    CHECK(scan(bytes).status == Status::not_client_hello);
    // A handshake message longer than anything worth waiting for.
    CHECK(scan(u8(22) + u16(0x0301) + vec16(u8(1) + u24(0xffffff))).status == Status::not_client_hello);
    // An extension whose length runs past the end.
    Hello broken = typical();
    auto text = broken.records();
    const auto sni = text.find("www.example.org");
    text[sni - 2] = '\x7f';  // host_name length
    CHECK(scan(text).status == Status::not_client_hello);
    Hello truncated_extensions = typical();
    auto body = truncated_extensions.records();
    body.resize(body.size() - 3);  // the message says more bytes than the record holds
    body[3] = static_cast<char>((body.size() - 5) >> 8);
    body[4] = static_cast<char>((body.size() - 5) & 0xff);
    CHECK(scan(body).status == Status::need_more);  // the rest of the message may come in another record
}
