#include "tls/leaf_certificates.hpp"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace spe {

void X509Deleter::operator()(X509* x) const {
    X509_free(x);
}
void EvpKeyDeleter::operator()(EVP_PKEY* k) const {
    EVP_PKEY_free(k);
}

namespace {

constexpr long kBackdateSeconds = 24L * 3600;  // a client whose clock is a little behind accepts it

std::string openssl_error() {
    const auto e = ERR_get_error();
    if (e == 0) return "unknown OpenSSL error";
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    ERR_clear_error();
    return text;
}

struct FileCloser {
    void operator()(FILE* f) const { std::fclose(f); }
};

std::unique_ptr<FILE, FileCloser> open_ca_file(const std::string& path) {
    std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "r"));
    if (!f)
        throw std::runtime_error("cannot read SPE's CA file " + path +
                                 " (missing or unreadable: create the CA with ./spe ca, or name its "
                                 "directory with --ca-dir)");
    return f;
}

bool is_ip_address(const std::string& name) {
    ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.c_str());
    ASN1_OCTET_STRING_free(ip);
    return ip != nullptr;
}

/// Host names and IP addresses as a certificate may name them; anything else
/// in an SNI or a CONNECT target gets no certificate (and no chance to smuggle
/// text into one).
bool plausible_host_name(std::string_view name) {
    if (name.empty() || name.size() > 253) return false;
    const bool host_chars = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_';
    });
    return host_chars || is_ip_address(std::string(name));  // an IPv6 address has colons
}

void add_extension(X509* leaf, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, leaf, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (ext == nullptr) throw std::runtime_error("leaf certificate extension: " + openssl_error());
    X509_add_ext(leaf, ext, -1);
    X509_EXTENSION_free(ext);
}

/// subjectAltName with one entry: an IP address for an address literal, else a DNS name.
void add_subject_alt_name(X509* leaf, const std::string& name) {
    GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
    GENERAL_NAME* gen = nullptr;
    if (ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.c_str())) {
        gen = GENERAL_NAME_new();
        GENERAL_NAME_set0_value(gen, GEN_IPADD, ip);
    } else {
        ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
        ASN1_STRING_set(dns, name.data(), static_cast<int>(name.size()));
        gen = GENERAL_NAME_new();
        GENERAL_NAME_set0_value(gen, GEN_DNS, dns);
    }
    sk_GENERAL_NAME_push(names, gen);
    const int ok = X509_add1_ext_i2d(leaf, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT);
    GENERAL_NAMES_free(names);
    if (ok != 1) throw std::runtime_error("leaf certificate subjectAltName: " + openssl_error());
}

}  // namespace

CertificateAuthority CertificateAuthority::load(const std::string& directory) {
    const auto cert_path = directory + "/spe-ca.pem";
    const auto key_path = directory + "/spe-ca.key";
    CertificateAuthority ca;
    {
        auto f = open_ca_file(cert_path);
        ca.cert.reset(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
        if (!ca.cert) throw std::runtime_error(cert_path + " is not a PEM certificate: " + openssl_error());
    }
    {
        auto f = open_ca_file(key_path);
        ca.key.reset(PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr));
        if (!ca.key) throw std::runtime_error(key_path + " is not an unencrypted PEM private key: " + openssl_error());
    }
    if (X509_check_private_key(ca.cert.get(), ca.key.get()) != 1)
        throw std::runtime_error(key_path + " is not the key of " + cert_path +
                                 " (./spe ca --regenerate makes a new pair)");
    return ca;
}

LeafCertificates::LeafCertificates(CertificateAuthority ca, LeafLimits limits)
    : ca_(std::move(ca)),
      leaf_key_(EVP_EC_gen("P-256")),
      limits_(limits),
      tokens_(limits.burst),
      refilled_(std::chrono::steady_clock::now()) {
    if (!leaf_key_) throw std::runtime_error("cannot make the leaf key: " + openssl_error());
    limits_.capacity = std::max<std::size_t>(limits_.capacity, 1);
}

std::optional<X509Ptr> LeafCertificates::leaf_for(std::string_view name, std::string& why, Clock::time_point now) {
    if (!plausible_host_name(name)) {
        why = "no certificate for a name that is not a host name";
        return std::nullopt;
    }
    const auto rate_limited = [&] {
        why = "new leaf certificates are limited to " + std::to_string(static_cast<long>(limits_.per_second)) +
              " per second";
        return std::nullopt;
    };
    const auto share = [](const X509Ptr& cert) {
        X509_up_ref(cert.get());
        return std::optional<X509Ptr>(X509Ptr(cert.get()));
    };
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(name); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        Leaf& leaf = *it->second;
        // Renewed before it expires; past the rate, the old one serves while it is valid.
        if (now >= leaf.renew_at && take_token(now)) {
            make(leaf, now);
            ++renewed_;
        } else if (now >= leaf.expires) {
            return rate_limited();
        }
        return share(leaf.cert);
    }
    if (!take_token(now)) return rate_limited();
    if (lru_.size() >= limits_.capacity) {
        index_.erase(lru_.back().name);
        lru_.pop_back();
    }
    Leaf fresh{std::string(name), nullptr, {}, {}};
    make(fresh, now);
    lru_.push_front(std::move(fresh));
    index_.emplace(lru_.front().name, lru_.begin());
    return share(lru_.front().cert);
}

void LeafCertificates::make(Leaf& leaf, Clock::time_point now) {
    leaf.cert = sign(leaf.name);
    const auto validity = std::chrono::duration_cast<Clock::duration>(limits_.validity);
    leaf.renew_at = now + validity * 2 / 3;
    leaf.expires = now + validity;
    ++made_;
}

bool LeafCertificates::take_token(Clock::time_point now) {
    if (now > refilled_) {
        const std::chrono::duration<double> elapsed = now - refilled_;
        refilled_ = now;
        tokens_ = std::min(limits_.burst, tokens_ + elapsed.count() * limits_.per_second);
    }
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
}

X509Ptr LeafCertificates::sign(std::string_view name_view) const {
    const std::string name(name_view);
    X509Ptr leaf(X509_new());
    X509* x = leaf.get();
    X509_set_version(x, X509_VERSION_3);
    std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), BN_free);
    BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
    BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x));
    X509_gmtime_adj(X509_getm_notBefore(x), -kBackdateSeconds);
    X509_gmtime_adj(X509_getm_notAfter(x), static_cast<long>(limits_.validity.count()));
    X509_set_pubkey(x, leaf_key_.get());
    X509_NAME* subject = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("SPE"), -1, -1, 0);
    const auto cn = name.substr(0, 64);  // X.520: a common name has at most 64 characters
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(x, X509_get_subject_name(ca_.cert.get()));
    add_extension(x, ca_.cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(x, ca_.cert.get(), NID_key_usage, "critical,digitalSignature");
    add_extension(x, ca_.cert.get(), NID_ext_key_usage, "serverAuth");
    add_extension(x, ca_.cert.get(), NID_authority_key_identifier, "keyid:always");
    add_subject_alt_name(x, name);
    if (X509_sign(x, ca_.key.get(), EVP_sha256()) == 0)
        throw std::runtime_error("cannot sign a leaf certificate: " + openssl_error());
    return leaf;
}

std::size_t LeafCertificates::cached() const {
    std::lock_guard lock(mutex_);
    return lru_.size();
}

std::uint64_t LeafCertificates::made() const {
    std::lock_guard lock(mutex_);
    return made_;
}

std::uint64_t LeafCertificates::renewed() const {
    std::lock_guard lock(mutex_);
    return renewed_;
}

}  // namespace spe
