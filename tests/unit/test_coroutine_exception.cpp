#include "core/coroutine_exception.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

TEST_CASE("a coroutine's exception is reported with its message, a clean end is not reported") {
    std::string reported = "-";
    auto handler = spe::report_exception([&](const char* what) { reported = what; });
    handler(nullptr);
    CHECK(reported == "-");
    handler(std::make_exception_ptr(std::runtime_error("the acceptor broke")));
    CHECK(reported == "the acceptor broke");
}
