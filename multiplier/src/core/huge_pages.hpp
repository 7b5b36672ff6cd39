// Memory in whole 2 MiB pages for the large tables the judge fills
// (judge/recent_table.hpp), where the kernel gives them: transparent huge pages
// asked for with madvise, which Debian's default ("madvise") grants. Why: the
// judge's table of the last 16,384 fetches spans 11 MB (the fetch memory's, 3 MB),
// and each request reads and writes it at random places; on 4 KiB pages nearly
// each of those missed the TLB as well as the caches. Measured with
// `./spe bench cache_judge`: see docs/benchmarks.md, "Cost of the cache-rule judge".
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace spe {

/// A huge page on x86-64 (transparent huge pages): the unit of map_huge_pages.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// At least `bytes` of zeroed memory, 2 MiB-aligned, advised for huge pages; throws std::bad_alloc.
void* map_huge_pages(std::size_t bytes);
/// Returns what map_huge_pages(bytes) gave.
void unmap_huge_pages(void* at, std::size_t bytes) noexcept;

/// An allocator that maps blocks of a huge page or more in huge pages and leaves smaller
/// ones to the heap (a table of a few hundred KB would waste most of a page).
template <class T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr std::size_t kHugeFrom = kHugePageBytes;

    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept {}  // NOLINT: rebinding, as allocators do

    T* allocate(std::size_t n) {
        if (n * sizeof(T) < kHugeFrom) return std::allocator<T>{}.allocate(n);
        return static_cast<T*>(map_huge_pages(n * sizeof(T)));
    }
    void deallocate(T* at, std::size_t n) noexcept {
        if (n * sizeof(T) < kHugeFrom) return std::allocator<T>{}.deallocate(at, n);
        unmap_huge_pages(at, n * sizeof(T));
    }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const noexcept {
        return true;
    }
};

}  // namespace spe
