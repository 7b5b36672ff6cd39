// Credentials and cookies as a keyed digest: no Cookie, Set-Cookie,
// Authorization or Proxy-Authorization value is written anywhere (records, the
// judge's reasons and evidence, captures); where "equal or not" matters, the
// value's HMAC-SHA256 under a key made once per Multiplier process stands for it.
// Equal values give equal digests within one run; across runs (other keys) they
// compare as nothing, and nobody without the key can test a guess against one.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace spe {

class SecretDigest {
public:
    /// A fresh random key (OpenSSL RAND_bytes): two instances never share one.
    SecretDigest();

    /// "hmac:" and the first 16 hex digits (64 bits) of HMAC-SHA256(key, value).
    std::string digest(std::string_view value) const;

private:
    std::array<unsigned char, 32> key_{};
};

/// The Multiplier's key: made at first use, the same for every digest of the process.
const SecretDigest& process_secret_digest();

/// Cookie, Set-Cookie, Authorization, Proxy-Authorization (any case): the fields never written as they are.
bool is_secret_field(std::string_view name);

/// A serialized header block (start line, field lines, CRLF) with each secret
/// field's value replaced by `digest` of it as received (surrounding whitespace
/// removed); everything else unchanged.
std::string redact_header_text(std::string_view block, const SecretDigest& digest);

}  // namespace spe
