#include "read_buffer.hpp"

#include <catch2/catch.hpp>

#include <vector>

using spe::BufferRecycler;

TEST_CASE("a freed read buffer is taken again by the next reply, up to a bounded stock") {
    BufferRecycler::release();
    spe::ReadBuffer buffer;
    buffer.prepare(16 * 1024);
    const void* first = buffer.data().data();
    buffer.shrink_to_fit();  // what a connection does between requests
    CHECK(BufferRecycler::kept() == 1);
    buffer.prepare(4096);
    CHECK(buffer.data().data() == first);
    CHECK(BufferRecycler::kept() == 0);
    buffer.shrink_to_fit();

    std::vector<void*> blocks;
    for (std::size_t i = 0; i < BufferRecycler::kKeep + 5; ++i)
        blocks.push_back(BufferRecycler::take());
    for (void* b : blocks)
        BufferRecycler::give(b);
    CHECK(BufferRecycler::kept() == BufferRecycler::kKeep);
    BufferRecycler::release();
    CHECK(BufferRecycler::kept() == 0);
}

TEST_CASE("buffers larger than a block come from the heap and are not kept") {
    BufferRecycler::release();
    spe::ReadBuffer buffer;
    buffer.prepare(64 * 1024);
    buffer.shrink_to_fit();
    CHECK(BufferRecycler::kept() == 0);
}
