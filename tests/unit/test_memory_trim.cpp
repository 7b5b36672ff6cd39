// When the Multiplier gives freed heap memory back: once after a burst has
// subsided, never under steady load or for small bursts.
#include "memory_trim.hpp"

#include <catch2/catch.hpp>

using spe::TrimPolicy;

TEST_CASE("a burst is trimmed when it has subsided to a quarter of its peak") {
    TrimPolicy p;
    CHECK_FALSE(p.due(500, 480));  // the burst
    CHECK_FALSE(p.due(480, 300));
    CHECK(p.due(300, 100));  // 100 <= 500 / 4
    CHECK_FALSE(p.due(100, 90));
    CHECK(p.due(90, 0));  // the 100 still in flight at the trim have finished too
    CHECK_FALSE(p.due(0, 0));
    CHECK_FALSE(p.due(3, 0));
}

TEST_CASE("the peak between two samples counts, not only the samples") {
    TrimPolicy p;
    CHECK(p.due(200, 0));  // 200 at once between ticks, all done by the tick
}

TEST_CASE("steady load and small bursts are never trimmed") {
    TrimPolicy steady;
    for (int i = 0; i < 100; ++i)
        CHECK_FALSE(steady.due(400, 380));
    TrimPolicy small;
    CHECK_FALSE(small.due(TrimPolicy::kMinPeak - 1, 0));
}

TEST_CASE("a slow decline is trimmed once it is below a quarter of the peak since the last trim") {
    TrimPolicy p;
    std::size_t in_flight = 400, trims = 0;
    while (in_flight > 0) {
        const auto next = in_flight * 8 / 10;
        trims += p.due(in_flight, next);
        in_flight = next;
    }
    CHECK(trims >= 1);
}

TEST_CASE("the allocator named at start-up is the one serving malloc") {
    const auto name = spe::heap_allocator();
#if defined(SPE_MIMALLOC)
    // Linked into the release build: it must really have taken over malloc.
    CHECK(name.starts_with("mimalloc 2."));
    CHECK(name.find("NOT") == std::string::npos);
#else
    CHECK(name.find("mimalloc") == std::string::npos);
#endif
}
