#include "context/reference_budget.hpp"
#include "http/md5_digest.hpp"

#include <catch2/catch.hpp>

#include <string>

using spe::KeptBody;
using spe::ReferenceBudget;

TEST_CASE("the reference budget gives what it has left, and takes it back") {
    ReferenceBudget budget(1000);
    CHECK(budget.per_body() == 250);
    CHECK(budget.take(600));
    CHECK_FALSE(budget.take(401));
    CHECK(budget.in_use() == 600);
    CHECK(budget.take(400));
    CHECK_FALSE(budget.take(1));
    budget.give_back(1000);
    CHECK(budget.in_use() == 0);
}

TEST_CASE("a kept body holds its bytes of the budget until the last fan-out lets go") {
    ReferenceBudget budget(1000);
    const std::string body(200, 'b');
    std::shared_ptr<const spe::ReferenceBody> held;
    {
        KeptBody kept(budget, body.size());
        CHECK(budget.in_use() == 200);  // a known length is taken at once
        kept.append(body.data(), 120);
        kept.append(body.data() + 120, 80);
        held = kept.finish("md5 of it");
    }
    REQUIRE(held);
    CHECK(held->bytes == body);
    CHECK(held->md5 == "md5 of it");
    CHECK(budget.in_use() == 200);
    held.reset();
    CHECK(budget.in_use() == 0);
}

TEST_CASE("a body of unknown length takes its bytes as they come, and gives up past a quarter of the budget") {
    ReferenceBudget budget(1000);
    const std::string piece(100, 'p');
    KeptBody kept(budget, std::nullopt);
    kept.append(piece.data(), piece.size());
    kept.append(piece.data(), piece.size());
    CHECK(budget.in_use() == 200);
    kept.append(piece.data(), piece.size());  // 300 > 250: not kept, its bytes back
    CHECK(budget.in_use() == 0);
    kept.append(piece.data(), 10);
    CHECK(budget.in_use() == 0);
    CHECK_FALSE(kept.finish("x"));
}

TEST_CASE("a body the budget cannot hold now is not kept; one never finished gives its bytes back") {
    ReferenceBudget budget(1000);
    REQUIRE(budget.take(900));  // other fan-outs' bodies
    {
        KeptBody too_big(budget, 200);
        CHECK(budget.in_use() == 900);
        CHECK_FALSE(too_big.finish("x"));
        KeptBody fits(budget, 100);
        CHECK(budget.in_use() == 1000);
    }  // the client went away before the body's end
    CHECK(budget.in_use() == 900);
    KeptBody larger_than_a_quarter(budget, 251);
    CHECK_FALSE(larger_than_a_quarter.finish("x"));
}

TEST_CASE("a reply without a body (HEAD, 304) whose header gives a length keeps an empty body") {
    ReferenceBudget budget(1000);
    KeptBody kept(budget, 0);
    const auto held = kept.finish("d41d8cd98f00b204e9800998ecf8427e");
    REQUIRE(held);
    CHECK(held->bytes.empty());
    CHECK(budget.in_use() == 0);
}

TEST_CASE("a budget of 0 keeps no body") {
    ReferenceBudget budget(0);
    KeptBody kept(budget, std::nullopt);
    kept.append("a", 1);
    CHECK_FALSE(kept.finish("x"));
}

TEST_CASE("a body's MD5 is of every byte, whether it was kept, never kept or given up midway") {
    const std::string body = "the Collector's body, relayed to the client in pieces of any size";
    const auto expected = spe::md5_hex(body.data(), body.size());
    auto relayed = [&](ReferenceBudget& budget, std::optional<std::uint64_t> length) {
        KeptBody kept(budget, length);
        for (std::size_t at = 0; at < body.size(); at += 7)
            kept.append(body.data() + at, std::min<std::size_t>(7, body.size() - at));
        CHECK(kept.bytes() == body.size());
        return kept.md5();
    };
    ReferenceBudget roomy(4 * body.size());
    CHECK(relayed(roomy, body.size()) == expected);  // kept: hashed once whole
    CHECK(relayed(roomy, std::nullopt) == expected);
    ReferenceBudget small(4 * 20);  // a quarter is 20 bytes: kept until then, then hashed as it passes
    CHECK(relayed(small, std::nullopt) == expected);
    CHECK(small.in_use() == 0);
    CHECK(relayed(small, body.size()) == expected);  // never kept
    ReferenceBudget none(0);
    CHECK(relayed(none, std::nullopt) == expected);

    KeptBody empty(roomy, 0);
    CHECK(empty.md5() == "d41d8cd98f00b204e9800998ecf8427e");
}
