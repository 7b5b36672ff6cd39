// The MD5 of a body computed by OpenSSL's one-shot EVP_Digest, apart from the
// Multiplier's streaming Md5Digest: a test that compares the two finds a digest
// that skipped, repeated or reordered the pieces it was fed.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <string>
#include <string_view>

namespace spe::test {

inline std::string reference_md5(std::string_view body) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int n = 0;
    if (EVP_Digest(body.data(), body.size(), digest.data(), &n, EVP_md5(), nullptr) != 1) return "EVP_Digest failed";
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
        out += kHex[digest[i] >> 4];
        out += kHex[digest[i] & 0xf];
    }
    return out;
}

}  // namespace spe::test
