#include "http/secret_digest.hpp"
#include "core/ascii.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <boost/beast/core/string.hpp>

#include <stdexcept>

namespace spe {

SecretDigest::SecretDigest() {
    if (RAND_bytes(key_.data(), static_cast<int>(key_.size())) != 1)
        throw std::runtime_error("OpenSSL: no random bytes for the secret digest's key");
}

std::string SecretDigest::digest(std::string_view value) const {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
             reinterpret_cast<const unsigned char*>(value.data()), value.size(), mac.data(), &length) == nullptr ||
        length < 8)
        throw std::runtime_error("OpenSSL: HMAC-SHA256 failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "hmac:";
    for (std::size_t i = 0; i < 8; ++i)
        out.append({kHex[mac[i] >> 4], kHex[mac[i] & 0xf]});
    return out;
}

const SecretDigest& process_secret_digest() {
    static const SecretDigest digest;
    return digest;
}

bool is_secret_field(std::string_view name) {
    auto is = [&](std::string_view secret) { return name.size() == secret.size() && spe::iequals(name, secret); };
    return is("cookie") || is("set-cookie") || is("authorization") || is("proxy-authorization");
}

std::string redact_header_text(std::string_view block, const SecretDigest& digest) {
    // One line at a time: its content, and its line end as it was (CRLF, or a bare LF).
    auto next_line = [&](std::string_view& content, std::string_view& ending) {
        const auto end = block.find('\n');
        const auto line = block.substr(0, end == std::string_view::npos ? block.size() : end + 1);
        block.remove_prefix(line.size());
        content = line;
        if (!content.empty() && content.back() == '\n') content.remove_suffix(1);
        if (!content.empty() && content.back() == '\r') content.remove_suffix(1);
        ending = line.substr(content.size());
    };
    auto continues = [&] { return !block.empty() && (block.front() == ' ' || block.front() == '\t'); };
    std::string out;
    out.reserve(block.size());
    bool start_line = true;
    while (!block.empty()) {
        std::string_view content, ending;
        next_line(content, ending);
        const auto colon = content.find(':');
        if (start_line || colon == std::string_view::npos || !is_secret_field(trim(content.substr(0, colon)))) {
            out.append(content).append(ending);
            start_line = false;
            continue;
        }
        // A secret field: its value, with any obsolete folded lines after it (RFC 9112 5.2), as one digest.
        std::string value(trim(content.substr(colon + 1)));
        while (continues()) {
            std::string_view more;
            next_line(more, ending);
            value.append(" ").append(trim(more));
        }
        out.append(content.substr(0, colon + 1)).append(" ").append(digest.digest(value)).append(ending);
    }
    return out;
}

}  // namespace spe
