// Leaf certificates for intercepted hosts, signed by SPE's CA (./spe ca).
//
// One leaf key (P-256) serves every host, as in mitmproxy: making a leaf is
// then one ECDSA signature, not a key generation. Leaves are kept in a
// bounded LRU cache, and new ones are made at a bounded rate (a token
// bucket), so a flood of distinct SNI names costs neither unbounded memory
// nor unbounded CPU: past the rate, the handshake fails and is recorded.
// A cached leaf is renewed once less than a third of its validity remains
// (a Multiplier running for weeks never hands out an expired one); past the
// rate, the old leaf serves until it expires.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

using X509 = struct x509_st;
using EVP_PKEY = struct evp_pkey_st;

namespace spe {

struct X509Deleter {
    void operator()(X509* x) const;
};
struct EvpKeyDeleter {
    void operator()(EVP_PKEY* k) const;
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
using EvpKeyPtr = std::unique_ptr<EVP_PKEY, EvpKeyDeleter>;

/// SPE's CA as read from its directory. Throws std::runtime_error naming the
/// file and the command that creates it when it is missing or unreadable.
struct CertificateAuthority {
    X509Ptr cert;
    EvpKeyPtr key;
    static CertificateAuthority load(const std::string& directory);
};

struct LeafLimits {
    std::size_t capacity = 1024;                                  // leaves kept (about 1 KB each)
    double per_second = 100;                                      // new leaves per second, sustained
    double burst = 200;                                           // new leaves at once, after a quiet time
    std::chrono::seconds validity = std::chrono::hours(24 * 30);  // notAfter - now when made (--leaf-validity)
};

class LeafCertificates {
public:
    LeafCertificates(CertificateAuthority ca, LeafLimits limits);

    using Clock = std::chrono::steady_clock;

    /// The leaf for `name` (a host name or an IP address literal), a new
    /// reference the caller owns; nullopt, with the reason in `why`, when a
    /// new leaf would exceed the rate. A cached leaf with less than a third
    /// of its validity left is replaced by a new one (`now`: for tests).
    std::optional<X509Ptr> leaf_for(std::string_view name, std::string& why, Clock::time_point now = Clock::now());
    EVP_PKEY* leaf_key() const { return leaf_key_.get(); }
    X509* ca_cert() const { return ca_.cert.get(); }

    std::size_t cached() const;
    std::uint64_t made() const;
    std::uint64_t renewed() const;

private:
    struct Leaf {
        std::string name;
        X509Ptr cert;
        Clock::time_point renew_at;  // two thirds into its validity
        Clock::time_point expires;
    };
    X509Ptr sign(std::string_view name) const;
    bool take_token(Clock::time_point now);
    void make(Leaf& leaf, Clock::time_point now);

    CertificateAuthority ca_;
    EvpKeyPtr leaf_key_;
    LeafLimits limits_;
    mutable std::mutex mutex_;
    std::list<Leaf> lru_;  // most recently used first
    std::unordered_map<std::string_view, decltype(lru_)::iterator> index_;
    double tokens_;
    Clock::time_point refilled_;
    std::uint64_t made_ = 0;
    std::uint64_t renewed_ = 0;
};

}  // namespace spe
