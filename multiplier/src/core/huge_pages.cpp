#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace spe {

namespace {

/// `n` rounded up to a whole number of huge pages (a size, or an address to align).
std::uintptr_t round_up(std::uintptr_t n) {
    return (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* map_huge_pages(std::size_t bytes) {
    // The kernel maps a huge page only where a whole aligned 2 MiB lies in the mapping: one page more is
    // mapped, and what lies before and after the aligned span given back.
    const std::size_t size = round_up(bytes);
    const std::size_t mapped = size + kHugePageBytes;
    void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const auto aligned = round_up(start);
    if (aligned > start) munmap(raw, aligned - start);
    if (const auto end = start + mapped; end > aligned + size)
        munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
    void* at = reinterpret_cast<void*>(aligned);
    // Advice, not a demand: with transparent huge pages off, the table works as before.
    (void)madvise(at, size, MADV_HUGEPAGE);
    return at;
}

void unmap_huge_pages(void* at, std::size_t bytes) noexcept {
    munmap(at, round_up(bytes));
}

}  // namespace spe
