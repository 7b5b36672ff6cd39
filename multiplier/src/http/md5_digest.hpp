// Incremental MD5 of a message body, fed as bytes pass (OpenSSL EVP).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct evp_md_ctx_st;

namespace spe {

class Md5Digest {
public:
    Md5Digest();
    ~Md5Digest();
    Md5Digest(Md5Digest&&) noexcept;
    Md5Digest& operator=(Md5Digest&&) noexcept;
    Md5Digest(const Md5Digest&) = delete;
    Md5Digest& operator=(const Md5Digest&) = delete;

    void update(const void* data, std::size_t size);
    /// Lowercase hex of the digest. Call once; the digest is then finished.
    std::string hex_final();
    std::uint64_t bytes() const { return bytes_; }

private:
    struct CtxDeleter {
        void operator()(evp_md_ctx_st* ctx) const;
    };
    std::unique_ptr<evp_md_ctx_st, CtxDeleter> ctx_;
    std::uint64_t bytes_ = 0;
};

/// MD5 of a whole buffer, for tests and small bodies.
std::string md5_hex(const void* data, std::size_t size);

}  // namespace spe
