// delta-seconds (RFC 9111 1.2.2) as the judge reads it in Cache-Control arguments and in Age (5.1).
#include "judge/delta_seconds.hpp"

#include <catch2/catch.hpp>

#include <string>

TEST_CASE("delta-seconds is 1*DIGIT, and 2^31 from there up") {
    CHECK(spe::parse_delta_seconds("0") == 0);
    CHECK(spe::parse_delta_seconds("003600") == 3600);
    CHECK(spe::parse_delta_seconds("2147483647") == 2147483647);
    CHECK(spe::parse_delta_seconds("2147483648") == spe::kDeltaSecondsInfinity);
    CHECK(spe::parse_delta_seconds("2147483649") == spe::kDeltaSecondsInfinity);
    CHECK(spe::parse_delta_seconds(std::string(400, '9')) == spe::kDeltaSecondsInfinity);
    for (const char* bad : {"", "-1", "+1", "1.5", "3600s", " 1", "1 ", "'1'", "\"1\""})
        CHECK_FALSE(spe::parse_delta_seconds(bad));
    CHECK_FALSE(spe::parse_delta_seconds(std::string(400, '9') + "s"));  // a suffix past any integer's digits
}

TEST_CASE("a directive's argument is delta-seconds in token or quoted-string form (RFC 9111 5.2)") {
    CHECK(spe::directive_seconds("3600") == 3600);
    CHECK(spe::directive_seconds("\"3600\"") == 3600);
    CHECK(spe::directive_seconds(R"("36\00")") == 3600);  // a quoted-pair is the character it quotes
    for (const char* bad : {"'3600'", "\"3600", "3600\"", "\"36\"00\"", "\"\"", "\"-1\"", "\"3600s\"", "\" 3600\""})
        CHECK_FALSE(spe::directive_seconds(bad));
}

TEST_CASE("an Age is the first member of its list, ignored when invalid (RFC 9111 5.1)") {
    CHECK(spe::age_seconds("7200") == 7200);
    CHECK(spe::age_seconds("7200, 0") == 7200);
    CHECK(spe::age_seconds(" 0 ,7200") == 0);
    CHECK(spe::age_seconds("99999999999999999999") == spe::kDeltaSecondsInfinity);
    for (const char* bad : {"10s", "-1", "abc", "", "7200.0", ", 7200", "\"5\""})
        CHECK_FALSE(spe::age_seconds(bad));
}
