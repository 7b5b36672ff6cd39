#include "http/expected_body_digest.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {

std::string pattern(std::size_t n, int seed = 3) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i)
        s.push_back(static_cast<char>(static_cast<int>(i) * 7 + seed));
    return s;
}

/// The digest of `body` fed in pieces of `piece` bytes, expecting `reference` (may be null).
std::string digest_of(const std::string& body, std::size_t piece, const spe::ReferenceBody* reference) {
    spe::ExpectedBodyDigest d;
    d.expect(reference);
    for (std::size_t off = 0; off < body.size(); off += piece)
        d.update(body.data() + off, std::min(piece, body.size() - off));
    CHECK(d.bytes() == body.size());
    return d.hex_final();
}

}  // namespace

TEST_CASE("a body equal to the reference gets the reference's digest without hashing it") {
    // A stand-in digest: only a digest taken from the reference, not computed, can equal it.
    const spe::ReferenceBody reference{pattern(10000), "reference's own digest"};
    for (std::size_t piece : {1u, 7u, 4096u, 20000u}) {
        CAPTURE(piece);
        CHECK(digest_of(reference.bytes, piece, &reference) == "reference's own digest");
    }
    const spe::ReferenceBody empty{"", "empty reference's digest"};
    CHECK(digest_of("", 1, &empty) == "empty reference's digest");
}

TEST_CASE("a body that differs from the reference anywhere gets its own MD5") {
    const std::string ref = pattern(10000);
    const spe::ReferenceBody reference{ref, spe::md5_hex(ref.data(), ref.size())};
    std::string first = ref, middle = ref, last = ref;
    first[0] ^= 1;
    middle[5000] ^= 1;
    last[9999] ^= 1;
    const std::string shorter = ref.substr(0, 9999);
    const std::string longer = ref + "x";
    for (const std::string* body :
         std::initializer_list<const std::string*>{&first, &middle, &last, &shorter, &longer}) {
        const auto own = spe::md5_hex(body->data(), body->size());
        for (std::size_t piece : {1u, 7u, 4096u, 20000u}) {
            CAPTURE(body->size(), piece);
            CHECK(digest_of(*body, piece, &reference) == own);
        }
    }
    CHECK(digest_of("", 1, &reference) == spe::md5_hex("", 0));
}

TEST_CASE("without a reference every byte is hashed") {
    const std::string body = pattern(5000, 11);
    CHECK(digest_of(body, 700, nullptr) == spe::md5_hex(body.data(), body.size()));
    CHECK(digest_of("", 1, nullptr) == "d41d8cd98f00b204e9800998ecf8427e");
}
