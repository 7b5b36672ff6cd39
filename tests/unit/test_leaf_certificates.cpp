#include "tls/leaf_certificates.hpp"
#include "tls/tls_interceptor.hpp"

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace fs = std::filesystem;

namespace {

/// A directory with spe-ca.pem and spe-ca.key, as ./spe ca makes them (P-256, CA:TRUE).
struct TestCa {
    fs::path dir;
    spe::X509Ptr cert;

    TestCa() {
        dir = fs::temp_directory_path() / ("spe-test-ca-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(reinterpret_cast<std::uintptr_t>(this)));
        fs::create_directories(dir);
        spe::EvpKeyPtr key(EVP_EC_gen("P-256"));
        cert.reset(X509_new());
        X509_set_version(cert.get(), X509_VERSION_3);
        ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
        X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600L * 24 * 365);
        X509_set_pubkey(cert.get(), key.get());
        X509_NAME* name = X509_get_subject_name(cert.get());
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("test CA"), -1, -1,
                                   0);
        X509_set_issuer_name(cert.get(), name);
        X509V3_CTX ctx;
        X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
        for (auto [nid, value] :
             {std::pair{NID_basic_constraints, "critical,CA:TRUE"}, std::pair{NID_key_usage, "critical,keyCertSign"},
              std::pair{NID_subject_key_identifier, "hash"}}) {
            X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
            X509_add_ext(cert.get(), ext, -1);
            X509_EXTENSION_free(ext);
        }
        X509_sign(cert.get(), key.get(), EVP_sha256());
        write((dir / "spe-ca.pem").string(), [&](FILE* f) { PEM_write_X509(f, cert.get()); });
        write((dir / "spe-ca.key").string(),
              [&](FILE* f) { PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr); });
    }
    ~TestCa() {
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    template <class Write>
    static void write(const std::string& path, Write w) {
        std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
        REQUIRE(f);
        w(f.get());
    }
    spe::CertificateAuthority load() const { return spe::CertificateAuthority::load(dir.string()); }
};

/// Whether `leaf` verifies as a TLS server certificate for `host` against `ca` alone.
bool verifies_for(X509* leaf, X509* ca, const std::string& host) {
    std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
    X509_STORE_add_cert(store.get(), ca);
    std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
    X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    return X509_verify_cert(ctx.get()) == 1;
}

spe::LeafLimits roomy() {
    return spe::LeafLimits{64, 1000, 1000};
}

}  // namespace

TEST_CASE("a leaf certificate verifies for its host name or address against SPE's CA, and only for it") {
    TestCa ca;
    spe::LeafCertificates leaves(ca.load(), roomy());
    std::string why;
    auto named = leaves.leaf_for("shop.example", why);
    REQUIRE(named);
    CHECK(verifies_for(named->get(), ca.cert.get(), "shop.example"));
    CHECK_FALSE(verifies_for(named->get(), ca.cert.get(), "other.example"));
    auto address = leaves.leaf_for("127.0.0.1", why);
    REQUIRE(address);
    CHECK(verifies_for(address->get(), ca.cert.get(), "127.0.0.1"));
    auto v6 = leaves.leaf_for("::1", why);
    REQUIRE(v6);
    CHECK(verifies_for(v6->get(), ca.cert.get(), "::1"));
}

TEST_CASE("a leaf is made once per name and kept; the cache is bounded, the least recently used goes") {
    TestCa ca;
    spe::LeafCertificates leaves(ca.load(), spe::LeafLimits{2, 1000, 1000});
    std::string why;
    auto a = leaves.leaf_for("a.example", why);
    auto again = leaves.leaf_for("a.example", why);
    REQUIRE(a);
    REQUIRE(again);
    CHECK(a->get() == again->get());
    CHECK(leaves.made() == 1);
    leaves.leaf_for("b.example", why);
    leaves.leaf_for("a.example", why);  // a is now the most recently used
    leaves.leaf_for("c.example", why);  // so b goes
    CHECK(leaves.cached() == 2);
    CHECK(leaves.made() == 3);
    leaves.leaf_for("a.example", why);
    CHECK(leaves.made() == 3);
    leaves.leaf_for("b.example", why);
    CHECK(leaves.made() == 4);
    // A leaf handed out outlives its eviction (the caller holds a reference).
    CHECK(verifies_for(a->get(), ca.cert.get(), "a.example"));
}

TEST_CASE("new leaves are rate-limited: past the burst a new name gets none, a cached one still does") {
    TestCa ca;
    spe::LeafCertificates leaves(ca.load(), spe::LeafLimits{100, 0.001, 3});
    std::string why;
    for (const char* name : {"1.example", "2.example", "3.example"})
        CHECK(leaves.leaf_for(name, why));
    CHECK_FALSE(leaves.leaf_for("4.example", why));
    CHECK_THAT(why, Catch::Contains("per second"));
    CHECK(leaves.leaf_for("2.example", why));
}

TEST_CASE("no certificate for a name that is not a host name (nothing can be smuggled into one)") {
    TestCa ca;
    spe::LeafCertificates leaves(ca.load(), roomy());
    std::string why;
    for (const char* bad : {"", "a.example,DNS:bank.example", "a b", "x\n", "a/b"})
        CHECK_FALSE(leaves.leaf_for(bad, why));
    CHECK(leaves.made() == 0);
    CHECK_FALSE(leaves.leaf_for(std::string(254, 'a'), why));
}

TEST_CASE("a missing or mismatched CA is a clear error naming the file and the command that makes it") {
    CHECK_THROWS_WITH(spe::CertificateAuthority::load("/nonexistent/spe-ca-dir"),
                      Catch::Contains("/nonexistent/spe-ca-dir/spe-ca.pem") && Catch::Contains("./spe ca"));
    TestCa one;
    TestCa other;
    fs::copy_file(other.dir / "spe-ca.key", one.dir / "spe-ca.key", fs::copy_options::overwrite_existing);
    CHECK_THROWS_WITH(one.load(), Catch::Contains("is not the key of"));
}

TEST_CASE("which tunnels stay opaque: --no-intercept patterns on the CONNECT host or on the SNI") {
    TestCa ca;
    spe::TlsInterceptor interceptor(ca.load(), {"*.bank.example", "pinned.example"}, roomy());
    CHECK(interceptor.tunnel_reason("shop.example").empty());
    CHECK_THAT(interceptor.tunnel_reason("www.BANK.example"), Catch::Contains("*.bank.example"));
    CHECK_THAT(interceptor.tunnel_reason("pinned.example"), Catch::Contains("pinned.example"));
    // An app that CONNECTs by address and names its host in the SNI only.
    const spe::ClientHello bank{"www.bank.example", "0123456789abcdef"};
    CHECK(interceptor.tunnel_reason("192.0.2.7").empty());
    CHECK(interceptor.tunnel_reason("127.0.0.1", "192.0.2.7", bank) ==
          "--no-intercept *.bank.example (SNI www.bank.example)");
    const spe::ClientHello shop{"shop.example", "0123456789abcdef"};
    CHECK(interceptor.tunnel_reason("127.0.0.1", "192.0.2.7", shop).empty());
    const spe::ClientHello no_sni{"", "0123456789abcdef"};
    CHECK(interceptor.tunnel_reason("127.0.0.1", "192.0.2.7", no_sni).empty());
}

TEST_CASE("a refusal is remembered per client address, TLS fingerprint and name, for a minute") {
    using namespace std::chrono_literals;
    TestCa ca;
    spe::TlsInterceptor interceptor(ca.load(), {}, roomy());
    const auto t0 = spe::TlsInterceptor::Clock::now();
    const spe::ClientHello tool{"shop.example", "aaaaaaaaaaaaaaaa"};
    const spe::ClientHello browser{"shop.example", "bbbbbbbbbbbbbbbb"};
    interceptor.remember_refusal("127.0.0.1", tool, "shop.example", t0);
    const auto again = interceptor.tunnel_reason("127.0.0.1", "shop.example", tool, t0 + 1s);
    CHECK_THAT(again, Catch::Contains("this client refused SPE's certificate for shop.example in the last 60 s") &&
                          Catch::Contains("127.0.0.1") && Catch::Contains("aaaaaaaaaaaaaaaa"));
    // The browser beside the tool, on the same address: still intercepted.
    CHECK(interceptor.tunnel_reason("127.0.0.1", "shop.example", browser, t0 + 1s).empty());
    CHECK(interceptor.tunnel_reason("127.0.0.2", "shop.example", tool, t0 + 1s).empty());
    const spe::ClientHello tool_elsewhere{"other.example", "aaaaaaaaaaaaaaaa"};
    CHECK(interceptor.tunnel_reason("127.0.0.1", "shop.example", tool_elsewhere, t0 + 1s).empty());
    CHECK_FALSE(interceptor.tunnel_reason("127.0.0.1", "shop.example", tool, t0 + 59s).empty());
    CHECK(interceptor.tunnel_reason("127.0.0.1", "shop.example", tool, t0 + 60s).empty());  // forgotten
    // Without SNI the name is the CONNECT host (what the leaf was made for).
    const spe::ClientHello no_sni{"", "cccccccccccccccc"};
    interceptor.remember_refusal("127.0.0.1", no_sni, spe::TlsInterceptor::leaf_name("192.0.2.7", no_sni), t0);
    CHECK_FALSE(interceptor.tunnel_reason("127.0.0.1", "192.0.2.7", no_sni, t0 + 1s).empty());
}

namespace {
std::string serial_of(X509* x) {
    std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr), BN_free);
    std::unique_ptr<char, void (*)(void*)> hex(BN_bn2hex(bn.get()), [](void* p) { OPENSSL_free(p); });
    return hex.get();
}
/// notAfter - notBefore, in seconds.
long validity_of(X509* x) {
    int days = 0, seconds = 0;
    ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(x), X509_get0_notAfter(x));
    return days * 86400L + seconds;
}
constexpr long kBackdate = 86400;  // notBefore is a day back
}  // namespace

TEST_CASE("a cached leaf is renewed once less than a third of its validity remains (never handed out expired)") {
    using namespace std::chrono_literals;
    TestCa ca;
    spe::LeafCertificates leaves(ca.load(), roomy());  // 30 days
    const auto t0 = spe::LeafCertificates::Clock::now();
    std::string why;
    auto first = leaves.leaf_for("shop.example", why, t0);
    REQUIRE(first);
    CHECK(validity_of(first->get()) == kBackdate + 30L * 86400);
    auto day19 = leaves.leaf_for("shop.example", why, t0 + 24h * 19);
    REQUIRE(day19);
    CHECK(serial_of(day19->get()) == serial_of(first->get()));
    auto day21 = leaves.leaf_for("shop.example", why, t0 + 24h * 21);  // less than 10 days left: a new one
    REQUIRE(day21);
    CHECK(serial_of(day21->get()) != serial_of(first->get()));
    CHECK(verifies_for(day21->get(), ca.cert.get(), "shop.example"));
    CHECK(leaves.made() == 2);
    CHECK(leaves.renewed() == 1);
    CHECK(leaves.cached() == 1);
    // The new leaf's own clock starts at day 21: kept until day 41.
    auto day40 = leaves.leaf_for("shop.example", why, t0 + 24h * 40);
    REQUIRE(day40);
    CHECK(serial_of(day40->get()) == serial_of(day21->get()));
    CHECK(leaves.made() == 2);
}

TEST_CASE("the leaf validity is configurable (--leaf-validity) and a renewal past the rate keeps the old leaf") {
    using namespace std::chrono_literals;
    TestCa ca;
    spe::LeafLimits limits{8, 0, 1, 3s};  // one leaf, then no more tokens ever
    spe::LeafCertificates leaves(ca.load(), limits);
    const auto t0 = spe::LeafCertificates::Clock::now();
    std::string why;
    auto first = leaves.leaf_for("a.example", why, t0);
    REQUIRE(first);
    CHECK(validity_of(first->get()) == kBackdate + 3);
    auto due = leaves.leaf_for("a.example", why, t0 + 2500ms);  // renewal due, but no token: still valid
    REQUIRE(due);
    CHECK(serial_of(due->get()) == serial_of(first->get()));
    CHECK_FALSE(leaves.leaf_for("a.example", why, t0 + 3s));  // expired, and none can be made
    CHECK_THAT(why, Catch::Contains("per second"));
    CHECK(leaves.made() == 1);
}
