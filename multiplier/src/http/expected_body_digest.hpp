// The MD5 of a body that most likely equals one already hashed: a proxy's
// reply and the Collector's reply to the same request. While the bytes equal
// the reference's, they are compared, not hashed (a memcmp costs a few percent
// of MD5); a body that ends equal gets the reference's digest, one that
// differs is hashed from where it started: the matched part from the
// reference's bytes, then its own. Either way the digest is the body's MD5.
#pragma once

#include "http/md5_digest.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace spe {

/// A whole body and its MD5 (lowercase hex), kept for comparisons.
struct ReferenceBody {
    std::string bytes;
    std::string md5;
};

class ExpectedBodyDigest {
public:
    /// Before the first byte: the body is expected to equal `reference` (null: hash every
    /// byte), which must outlive this digest.
    void expect(const ReferenceBody* reference) { reference_ = reference; }

    void update(const char* data, std::size_t size);
    /// Lowercase hex of the body's MD5. Call once.
    std::string hex_final();
    std::uint64_t bytes() const { return bytes_; }

private:
    /// The body differs from the reference (or has none): hashing takes over from here.
    Md5Digest& hashing();

    const ReferenceBody* reference_ = nullptr;  // set while every byte so far matched it
    std::optional<Md5Digest> digest_;           // made only once a byte differs
    std::uint64_t bytes_ = 0;
};

}  // namespace spe
