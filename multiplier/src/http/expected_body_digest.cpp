#include "http/expected_body_digest.hpp"

#include <cstring>

namespace spe {

Md5Digest& ExpectedBodyDigest::hashing() {
    if (!digest_) {
        digest_.emplace();
        // The bytes so far equal the reference's first ones: hash those.
        if (reference_) digest_->update(reference_->bytes.data(), static_cast<std::size_t>(bytes_));
        reference_ = nullptr;
    }
    return *digest_;
}

void ExpectedBodyDigest::update(const char* data, std::size_t size) {
    if (size == 0) return;
    if (reference_ && bytes_ + size <= reference_->bytes.size() &&
        std::memcmp(reference_->bytes.data() + bytes_, data, size) == 0) {
        bytes_ += size;
        return;
    }
    hashing().update(data, size);
    bytes_ += size;
}

std::string ExpectedBodyDigest::hex_final() {
    if (reference_ && bytes_ == reference_->bytes.size()) return reference_->md5;
    return hashing().hex_final();
}

}  // namespace spe
