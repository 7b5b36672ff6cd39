// X-SPE-Parent (the Collector's patch 0020): what a proxy's parent sent with its copy.
#include "judge/parent_stamp.hpp"

#include <catch2/catch.hpp>

TEST_CASE("a parent stamp gives the time, the Age and Date as sent, and the field names") {
    const auto s = spe::parse_parent_stamp(
        R"(t=1700000000.250; age="3"; date="Tue, 14 Nov 2023 22:13:20 GMT"; fields="date cache-control set-cookie")");
    REQUIRE(s);
    CHECK(s->time == 1700000000.25);
    CHECK(s->age == "3");
    CHECK(s->date == "Tue, 14 Nov 2023 22:13:20 GMT");
    CHECK(s->sent("set-cookie"));
    CHECK(s->sent("date"));
    CHECK_FALSE(s->sent("set"));
    CHECK_FALSE(s->sent("etag"));
}

TEST_CASE("a parent stamp without Age or Date, with escapes and unknown parameters") {
    const auto s = spe::parse_parent_stamp(R"(t=5; next=1;bare; fields="a"; date="x\"y\\z")");
    REQUIRE(s);
    CHECK(s->time == 5);
    CHECK_FALSE(s->age);
    CHECK(s->date == R"(x"y\z)");
    CHECK(s->fields == "a");
    const auto token = spe::parse_parent_stamp("age=12 ; t=7");  // unquoted values are tokens
    REQUIRE(token);
    CHECK(token->age == "12");
    CHECK(token->time == 7);
}

TEST_CASE("a parent stamp names the interim replies sent before the reply (patch 0021)") {
    const auto s = spe::parse_parent_stamp(R"(t=5; interim="103 102 1x3"; fields="link")");
    REQUIRE(s);
    CHECK(s->interim == std::vector<unsigned>{103, 102});  // what is not a status is skipped
    const auto none = spe::parse_parent_stamp(R"(t=5; fields="link")");
    REQUIRE(none);
    CHECK(none->interim.empty());
}

TEST_CASE("a parent stamp names the fields it sent for its hop only (patch 0023)") {
    const auto s = spe::parse_parent_stamp(R"(t=5; connection="x-hop-field keep-alive"; fields="connection date")");
    REQUIRE(s);
    CHECK(s->connection == "x-hop-field keep-alive");
    CHECK(s->fields == "connection date");
    const auto none = spe::parse_parent_stamp(R"(t=5; fields="date")");
    REQUIRE(none);
    CHECK(none->connection.empty());
}

TEST_CASE("a parent stamp without a valid time, or with an open quote or junk, is none") {
    for (const char* bad :
         {"", "age=3", "t=", "t=abc", "t=0", "t=-1", R"(t=1; date="open)", R"(t=1; date="a" b)", "t=1.2.3"})
        CHECK_FALSE(spe::parse_parent_stamp(bad));
}
