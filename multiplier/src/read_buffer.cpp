#include "read_buffer.hpp"

#include <new>

namespace spe {
namespace {

/// Free blocks, linked through their first bytes; freed with the thread.
struct Stock {
    struct Link {
        Link* next;
    };
    Link* head = nullptr;
    std::size_t count = 0;

    ~Stock() { clear(); }
    void clear() noexcept {
        while (head) {
            Link* next = head->next;
            ::operator delete(head, BufferRecycler::kBlockBytes);
            head = next;
        }
        count = 0;
    }
};

thread_local Stock stock;

}  // namespace

void* BufferRecycler::take() {
    if (!stock.head) return ::operator new(kBlockBytes);
    Stock::Link* block = stock.head;
    stock.head = block->next;
    --stock.count;
    return block;
}

void BufferRecycler::give(void* block) noexcept {
    if (stock.count >= kKeep) {
        ::operator delete(block, kBlockBytes);
        return;
    }
    stock.head = ::new (block) Stock::Link{stock.head};
    ++stock.count;
}

void BufferRecycler::release() noexcept {
    stock.clear();
}

std::size_t BufferRecycler::kept() noexcept {
    return stock.count;
}

}  // namespace spe
