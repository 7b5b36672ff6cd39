#include "tls/tls_interceptor.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <boost/asio/ssl/error.hpp>

#include <fnmatch.h>

namespace spe {
namespace {

constexpr std::size_t kRememberedRefusals = 4096;

int facts_index() {
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

HandshakeFacts* facts_of(SSL* ssl) {
    return static_cast<HandshakeFacts*>(SSL_get_ex_data(ssl, facts_index()));
}

std::string protocol_list(const unsigned char* in, unsigned int len) {
    std::string out;
    for (unsigned int i = 0; i < len;) {
        const unsigned int n = in[i++];
        if (i + n > len) break;
        if (!out.empty()) out += ", ";
        out.append(reinterpret_cast<const char*>(in + i), n);
        i += n;
    }
    return out.empty() ? "nothing" : out;
}

int select_http11(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
    static constexpr unsigned char kOurs[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    unsigned char* chosen = nullptr;
    if (SSL_select_next_proto(&chosen, outlen, kOurs, sizeof kOurs, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = chosen;
        return SSL_TLSEXT_ERR_OK;
    }
    if (auto* facts = facts_of(ssl))
        facts->problem = "the client offers only " + protocol_list(in, inlen) + " (SPE speaks http/1.1 only)";
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

}  // namespace

TlsInterceptor::TlsInterceptor(CertificateAuthority ca, std::vector<std::string> no_intercept, LeafLimits limits)
    : leaves_(std::move(ca), limits),
      no_intercept_(std::move(no_intercept)),
      context_(asio::ssl::context::tls_server),
      chain_(sk_X509_new_null()) {
    sk_X509_push(chain_.get(), leaves_.ca_cert());
    X509_up_ref(leaves_.ca_cert());
    SSL_CTX* ctx = context_.native_handle();
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    context_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::single_dh_use);
    // Resumed sessions skip the certificate: a browser's parallel connections to one host are cheap.
    static constexpr unsigned char kSessionContext[] = "spe-multiplier";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    SSL_CTX_set_cert_cb(ctx, &TlsInterceptor::choose_certificate, this);
    SSL_CTX_set_alpn_select_cb(ctx, &select_http11, nullptr);
}

int TlsInterceptor::choose_certificate(SSL* ssl, void* arg) {
    auto* self = static_cast<TlsInterceptor*>(arg);
    auto* facts = facts_of(ssl);
    if (facts == nullptr) return 0;
    if (const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name)) facts->sni = sni;
    facts->leaf_name = facts->sni.empty() ? facts->connect_host : facts->sni;
    std::string why;
    auto leaf = self->leaves_.leaf_for(facts->leaf_name, why);
    if (!leaf) {
        facts->problem = why + " (" + facts->leaf_name.substr(0, 80) + ")";
        return 0;
    }
    // The CA goes with the leaf: a client told to trust it by its key (Chromium's
    // --ignore-certificate-errors-spki-list) must find it in the chain it is sent.
    if (SSL_use_cert_and_key(ssl, leaf->get(), self->leaves_.leaf_key(), self->chain_.get(), 1) != 1) {
        facts->problem = "OpenSSL refused the leaf certificate";
        ERR_clear_error();
        return 0;
    }
    return 1;
}

void TlsInterceptor::attach(SSL* ssl, HandshakeFacts* facts) {
    SSL_set_ex_data(ssl, facts_index(), facts);
}

bool TlsInterceptor::client_refused_certificate(const error_code& ec) {
    if (ec.category() != asio::error::get_ssl_category()) return false;
    const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    // A received alert is reported as SSL_AD_REASON_OFFSET + its code.
    switch (reason - SSL_AD_REASON_OFFSET) {
        case SSL_AD_BAD_CERTIFICATE:
        case SSL_AD_UNSUPPORTED_CERTIFICATE:
        case SSL_AD_CERTIFICATE_REVOKED:
        case SSL_AD_CERTIFICATE_EXPIRED:
        case SSL_AD_CERTIFICATE_UNKNOWN:
        case SSL_AD_UNKNOWN_CA:
            return true;
        default:
            return false;
    }
}

namespace {
std::string refusal_key(std::string_view client_ip, const ClientHello& hello, std::string_view name) {
    return std::string(client_ip) + " " + hello.fingerprint + " " + std::string(name);
}
}  // namespace

std::string_view TlsInterceptor::leaf_name(std::string_view connect_host, const ClientHello& hello) {
    return hello.sni.empty() ? connect_host : std::string_view(hello.sni);
}

std::string TlsInterceptor::no_intercept_match(std::string_view name) const {
    const std::string text(name);
    for (const auto& pattern : no_intercept_)
        if (fnmatch(pattern.c_str(), text.c_str(), FNM_CASEFOLD) == 0) return pattern;
    return {};
}

std::string TlsInterceptor::tunnel_reason(std::string_view host) const {
    const auto pattern = no_intercept_match(host);
    return pattern.empty() ? std::string() : "--no-intercept " + pattern;
}

std::string TlsInterceptor::tunnel_reason(std::string_view client_ip, std::string_view connect_host,
                                          const ClientHello& hello, Clock::time_point now) {
    // An app may CONNECT by address and name its host in the SNI only: the leaf would follow the SNI.
    if (!hello.sni.empty())
        if (const auto pattern = no_intercept_match(hello.sni); !pattern.empty())
            return "--no-intercept " + pattern + " (SNI " + hello.sni + ")";
    const auto name = leaf_name(connect_host, hello);
    std::lock_guard lock(refused_mutex_);
    auto it = refused_.find(refusal_key(client_ip, hello, name));
    // An expired refusal stays in the table (it is bounded) until the order evicts it.
    if (it == refused_.end() || it->second <= now) return {};
    return "this client refused SPE's certificate for " + std::string(name) + " in the last " +
           std::to_string(kRefusalMemory.count()) + " s (the same address " + std::string(client_ip) +
           " and TLS fingerprint " + hello.fingerprint + ")";
}

void TlsInterceptor::remember_refusal(std::string_view client_ip, const ClientHello& hello, std::string_view name,
                                      Clock::time_point now) {
    auto key = refusal_key(client_ip, hello, name);
    std::lock_guard lock(refused_mutex_);
    const auto until = now + kRefusalMemory;
    if (auto [it, added] = refused_.try_emplace(key, until); !added) {
        it->second = until;
        return;
    }
    refused_order_.push_back(std::move(key));
    while (refused_order_.size() > kRememberedRefusals) {
        refused_.erase(refused_order_.front());
        refused_order_.pop_front();
    }
}

}  // namespace spe
