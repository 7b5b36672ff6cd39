// What the Multiplier needs to see inside a CONNECT tunnel (--intercept-tls):
// the TLS server context that presents leaf certificates signed by SPE's CA,
// and the rules that decide which tunnels stay opaque.
//
// A leaf is chosen per handshake, after the ClientHello (OpenSSL's certificate
// callback): for the SNI name, else for the host the client CONNECTed to.
// ALPN offers http/1.1 only; a client that offers ALPN without it (HTTP/2
// only) fails the handshake with no_application_protocol, and it is recorded.
#pragma once

#include "core/net.hpp"
#include "tls/client_hello.hpp"
#include "tls/leaf_certificates.hpp"

#include <openssl/x509.h>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace spe {

/// What one handshake learnt, for its record (kept by the session during the handshake).
struct HandshakeFacts {
    std::string connect_host;  // from the CONNECT target: the name when the client sends no SNI
    std::string sni;
    std::string leaf_name;  // the name the leaf certificate was made for
    std::string problem;    // why the server side gave up (no certificate, no common protocol)
};

class TlsInterceptor {
public:
    TlsInterceptor(CertificateAuthority ca, std::vector<std::string> no_intercept, LeafLimits limits);

    asio::ssl::context& context() { return context_; }
    LeafCertificates& leaves() { return leaves_; }

    using Clock = std::chrono::steady_clock;

    /// Why a CONNECT to `host` is tunnelled rather than intercepted, known
    /// before any TLS byte (a --no-intercept pattern); empty: look at its ClientHello.
    std::string tunnel_reason(std::string_view host) const;
    /// Why, once its ClientHello is read: the SNI matches a --no-intercept
    /// pattern, or this client (its address and TLS fingerprint) refused SPE's
    /// certificate for that name in the last kRefusalMemory; empty: intercept it.
    std::string tunnel_reason(std::string_view client_ip, std::string_view connect_host, const ClientHello& hello,
                              Clock::time_point now = Clock::now());
    /// The client at `client_ip` whose TLS stack sent `hello` refused SPE's
    /// certificate for `name`: its CONNECTs to that name are tunnelled for the
    /// next kRefusalMemory. Other clients on the same address (a browser
    /// beside a tool that does not trust SPE's CA) send other ClientHellos and
    /// are still intercepted; a client's port is no help, a new connection has a new one.
    void remember_refusal(std::string_view client_ip, const ClientHello& hello, std::string_view name,
                          Clock::time_point now = Clock::now());
    static constexpr std::chrono::seconds kRefusalMemory{60};
    /// The name a leaf is made for: the SNI, else the CONNECT host.
    static std::string_view leaf_name(std::string_view connect_host, const ClientHello& hello);

    /// Ties `facts` to the handshake on `ssl` (the certificate and ALPN callbacks fill it).
    static void attach(SSL* ssl, HandshakeFacts* facts);
    /// The handshake failed because the client sent a certificate alert
    /// (unknown CA, bad certificate...): it does not trust SPE's CA.
    static bool client_refused_certificate(const error_code& ec);

private:
    static int choose_certificate(SSL* ssl, void* self);

    LeafCertificates leaves_;
    std::vector<std::string> no_intercept_;  // glob patterns on the host name, case-insensitive
    asio::ssl::context context_;
    struct ChainDeleter {
        void operator()(STACK_OF(X509) * chain) const { sk_X509_pop_free(chain, X509_free); }
    };
    std::unique_ptr<STACK_OF(X509), ChainDeleter> chain_;  // sent after the leaf: SPE's CA
    std::string no_intercept_match(std::string_view name) const;

    std::mutex refused_mutex_;
    // "client ip fingerprint name" -> until when; bounded, and the oldest refusal is forgotten first
    std::unordered_map<std::string, Clock::time_point> refused_;
    std::deque<std::string> refused_order_;
};

}  // namespace spe
