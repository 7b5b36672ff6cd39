#include "http/md5_digest.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace spe {
namespace {
// Fetching the algorithm once avoids OpenSSL 3's implicit fetch on every init.
const EVP_MD* md5_algorithm() {
    static const EVP_MD* md = [] {
        EVP_MD* fetched = EVP_MD_fetch(nullptr, "MD5", nullptr);
        if (fetched == nullptr) throw std::runtime_error("OpenSSL: MD5 is not available");
        return fetched;
    }();
    return md;
}
}  // namespace

void Md5Digest::CtxDeleter::operator()(evp_md_ctx_st* ctx) const {
    EVP_MD_CTX_free(ctx);
}

Md5Digest::Md5Digest() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md5_algorithm(), nullptr) != 1)
        throw std::runtime_error("OpenSSL: cannot start an MD5 digest");
}

Md5Digest::~Md5Digest() = default;
Md5Digest::Md5Digest(Md5Digest&&) noexcept = default;
Md5Digest& Md5Digest::operator=(Md5Digest&&) noexcept = default;

void Md5Digest::update(const void* data, std::size_t size) {
    if (size == 0) return;
    EVP_DigestUpdate(ctx_.get(), data, size);
    bytes_ += size;
}

std::string Md5Digest::hex_final() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), md.data(), &len);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(len * 2, '\0');
    for (unsigned i = 0; i < len; ++i) {
        out[2 * i] = kHex[md[i] >> 4];
        out[2 * i + 1] = kHex[md[i] & 0xf];
    }
    return out;
}

std::string md5_hex(const void* data, std::size_t size) {
    Md5Digest d;
    d.update(data, size);
    return d.hex_final();
}

}  // namespace spe
