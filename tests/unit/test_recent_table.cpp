// The judge's bounded memory: a set-associative table that keeps the most
// recent keys and never grows.
#include "judge/recent_table.hpp"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("a recent table finds what it holds and replaces values in place") {
    spe::RecentTable<std::string> t(64);
    CHECK(t.find(7) == nullptr);  // empty: nothing allocated, nothing found
    t.insert_or_assign(7, "seven");
    t.insert_or_assign(7 + 64, "seventy-one");  // same set, another key
    REQUIRE(t.find(7));
    CHECK(*t.find(7) == "seven");
    CHECK(*t.find(71) == "seventy-one");
    t.insert_or_assign(7, "again");
    CHECK(*t.find(7) == "again");
    CHECK(t.capacity() == 64);
}

TEST_CASE("sequential keys: the table holds exactly the last `capacity` of them") {
    spe::RecentTable<int> t(1000);  // rounded up to 1024
    REQUIRE(t.capacity() == 1024);
    for (int serial = 1; serial <= 5000; ++serial)
        t.insert_or_assign(static_cast<std::uint64_t>(serial), serial);
    for (int serial = 1; serial <= 5000 - 1024; ++serial)
        CHECK_FALSE(t.find(static_cast<std::uint64_t>(serial)));
    for (int serial = 5000 - 1023; serial <= 5000; ++serial)
        CHECK(t.find(static_cast<std::uint64_t>(serial)));
}

TEST_CASE("a full set gives up its oldest key, not the one just updated") {
    spe::RecentTable<int> t(4);  // one set of four
    for (std::uint64_t k = 1; k <= 4; ++k)
        t.insert_or_assign(k, static_cast<int>(k));
    t.insert_or_assign(1, 10);  // an update keeps its age: key 1 is still the oldest
    t.insert_or_assign(5, 5);
    CHECK_FALSE(t.find(1));
    CHECK(*t.find(2) == 2);
    CHECK(*t.find(5) == 5);
    t.insert_or_assign(6, 6);
    CHECK_FALSE(t.find(2));
    CHECK(t.find(3));
}
