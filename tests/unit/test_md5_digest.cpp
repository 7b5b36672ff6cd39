#include "http/md5_digest.hpp"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("MD5 of known vectors (RFC 1321)") {
    CHECK(spe::md5_hex("", 0) == "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(spe::md5_hex("abc", 3) == "900150983cd24fb0d6963f7d28e17f72");
}

TEST_CASE("incremental digest equals the one-shot digest whatever the split") {
    std::string body;
    for (int i = 0; i < 100000; ++i)
        body.push_back(static_cast<char>(i * 7 + 3));
    const auto whole = spe::md5_hex(body.data(), body.size());
    for (std::size_t piece : {1u, 7u, 4096u, 65536u}) {
        spe::Md5Digest d;
        for (std::size_t off = 0; off < body.size(); off += piece)
            d.update(body.data() + off, std::min(piece, body.size() - off));
        CHECK(d.bytes() == body.size());
        CHECK(d.hex_final() == whole);
    }
}
