// The judge's bounded memory: a set-associative table that keeps the most
// recent keys and never grows.
#include "judge/recent_table.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <fstream>
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

namespace {

/// The VmFlags of the mapping of /proc/self/smaps that holds `at` ("" when none does).
std::string mapping_flags(const void* at) {
    std::ifstream smaps("/proc/self/smaps");
    const auto address = reinterpret_cast<std::uintptr_t>(at);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t from = 0;
        std::uintptr_t to = 0;
        if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &from, &to) == 2 &&
            line.find(':') > line.find(' '))  // a mapping's first line (a field's has its colon first)
            inside = from <= address && address < to;
        else if (inside && line.starts_with("VmFlags:"))
            return line;
    }
    return "";
}

}  // namespace

TEST_CASE("a large table is advised for huge pages and aligned to one; a small one stays on the heap") {
    // The judge's fetch table (16,384 fetches, 11 MB) looked up at random: on 4 KiB pages most lookups
    // missed the TLB. madvise's VM_HUGEPAGE shows as "hg" in the mapping's flags, whatever the kernel's THP mode.
    spe::RecentTable<std::array<char, 512>> large(8192);  // 4 MiB of values
    large.insert_or_assign(0, {});                        // key 0: the first value of the first set
    const auto* value = large.find(0);
    REQUIRE(value);
    CHECK(reinterpret_cast<std::uintptr_t>(value) % (std::size_t{2} << 20) == 0);
    if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))  // a kernel built with them
        CHECK(mapping_flags(value).find(" hg") != std::string::npos);
    for (std::uint64_t k = 0; k < large.capacity(); ++k)  // every byte of it usable
        large.insert_or_assign(k, {static_cast<char>(k)});
    CHECK((*large.find(8191))[0] == static_cast<char>(8191));

    spe::RecentTable<int> small(1024);
    small.insert_or_assign(1, 1);
    CHECK(mapping_flags(small.find(1)).find(" hg") == std::string::npos);
}
