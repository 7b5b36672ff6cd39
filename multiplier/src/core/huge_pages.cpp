#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace spe {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t whole_pages(std::size_t bytes) {
    return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

}  // namespace

void* map_huge_pages(std::size_t bytes) {
    // The kernel maps a huge page only where a whole aligned 2 MiB lies in the mapping: one page more is
    // mapped, and what lies before and after the aligned span given back.
    const std::size_t size = whole_pages(bytes);
    const std::size_t mapped = size + kHugePage;
    void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const auto aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(raw, aligned - start);
    if (const auto end = start + mapped; end > aligned + size)
        munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
    void* at = reinterpret_cast<void*>(aligned);
    // Advice, not a demand: with transparent huge pages off, the table works as before.
    (void)madvise(at, size, MADV_HUGEPAGE);
    return at;
}

void unmap_huge_pages(void* at, std::size_t bytes) noexcept {
    munmap(at, whole_pages(bytes));
}

}  // namespace spe
