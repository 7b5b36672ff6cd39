// The read buffers of client and upstream connections, and the allocator that
// recycles them.
//
// An idle connection holds no read buffer (docs/benchmarks.md, memory): each
// reply's buffer is allocated when the reply is read and freed after it. With
// glibc that was a 16 KiB malloc and free per upstream reply, and each such
// malloc consolidated the allocator's fast bins: about 6 % of the Multiplier's
// instructions per request with four proxies. Blocks of up to 16 KiB now go
// back to a small per-thread stock instead, for the next reply to take; larger
// buffers (long headers, bodies in flight) use the heap as before.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>

#include <cstddef>
#include <memory>

namespace spe {

class BufferRecycler {
public:
    static constexpr std::size_t kBlockBytes = 16 * 1024;
    /// At most this many free blocks are kept per thread (512 KiB).
    static constexpr std::size_t kKeep = 32;

    /// A block of kBlockBytes: a kept one if any, else a new one.
    static void* take();
    /// Keeps the block for the next take(), or frees it when the stock is full.
    static void give(void* block) noexcept;
    /// Frees this thread's stock (after a burst, with malloc_trim).
    static void release() noexcept;
    /// Blocks this thread keeps (for tests).
    static std::size_t kept() noexcept;
};

template <class T>
struct RecyclingAllocator {
    using value_type = T;

    RecyclingAllocator() = default;
    template <class U>
    RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n * sizeof(T) <= BufferRecycler::kBlockBytes) return static_cast<T*>(BufferRecycler::take());
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n * sizeof(T) <= BufferRecycler::kBlockBytes)
            BufferRecycler::give(p);
        else
            std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const RecyclingAllocator<U>&) const noexcept {
        return true;
    }
};

using ReadBuffer = boost::beast::basic_flat_buffer<RecyclingAllocator<char>>;

}  // namespace spe
