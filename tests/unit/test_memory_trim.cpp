// When the Multiplier gives freed heap memory back (once after a burst has
// subsided, never under steady load or for small bursts), and that doing so
// really returns it: the resident size falls back after a burst.
#include "context/memory_trim.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

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

TEST_CASE("after a burst, giving memory back returns the freed heap to the system") {
#if defined(__SANITIZE_ADDRESS__)
    // ASan's allocator keeps freed memory in its quarantine and ignores
    // malloc_trim: nothing this build does can be seen in its resident size.
    WARN("skipped in the ASan build: its allocator holds freed memory in quarantine whatever the Multiplier does");
    return;
#endif
    constexpr std::size_t kBlock = 4096, kBurstBytes = 96 << 20;
    const long base = spe::resident_kib();
    REQUIRE(base > 0);
    std::vector<std::unique_ptr<char[]>> burst;
    for (std::size_t i = 0; i < kBurstBytes / kBlock; ++i) {
        burst.push_back(std::make_unique<char[]>(kBlock));
        std::memset(burst.back().get(), static_cast<int>(i), kBlock);  // resident, not just reserved
    }
    // What outlives the burst sits above it in the heap, so free() alone cannot shrink the heap's top.
    auto survivor = std::make_unique<char[]>(kBlock);
    std::memset(survivor.get(), 1, kBlock);
    const long peak = spe::resident_kib();
    REQUIRE(peak - base >= static_cast<long>(kBurstBytes / 1024 / 2));  // the burst was seen
    burst.clear();
    burst.shrink_to_fit();
    const long freed = spe::resident_kib();
    spe::give_back_memory();
    const long after = spe::resident_kib();
    INFO("resident KiB: " << base << " before the burst, " << peak << " at its peak, " << freed << " after free(), "
                          << after << " after give_back_memory()");
    // mimalloc 2.0 keeps about a third of it cached (seen: 33 MiB of 96); without the give-back, all of it.
    CHECK(after - base < static_cast<long>(kBurstBytes / 1024 / 2));
}

TEST_CASE("the allocator named at start-up is the one serving malloc") {
    const auto name = spe::heap_allocator();
#if defined(SPE_MIMALLOC)
    // Linked into the release build: it must really have taken over malloc.
    CHECK(name.starts_with("mimalloc 2."));
    CHECK(name.find("NOT") == std::string::npos);
#else
    WARN("nothing to check in this build: it does not link mimalloc, so the name (" << name << ") is the C library's");
#endif
}
