// A bounded map from 64-bit keys to values, for what the cache-rule judge
// remembers: a fixed array of sets of kWays entries (the set chosen by the
// key's low bits); a new key in a full set replaces that set's oldest entry.
// Why not a node map with an eviction queue: at thousands of requests a
// second the judge's tables hold about 100,000 entries, and the node maps'
// allocations and cache misses (a bucket, a node, the queue, the evicted
// node) cost the Multiplier more than judging itself. Here a lookup touches
// one set and an insert allocates nothing. Sequential keys (fetch serials)
// fill consecutive sets, so the table holds exactly the last `capacity` of them.
#pragma once

#include "core/huge_pages.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace spe {

template <class Value>
class RecentTable {
public:
    static constexpr std::size_t kWays = 4;

    /// `capacity`: the entries kept, rounded up to a power of two (at least kWays).
    explicit RecentTable(std::size_t capacity) : sets_(std::bit_ceil(std::max(capacity, kWays)) / kWays) {}

    const Value* find(std::uint64_t key) const {
        if (tags_.empty()) return nullptr;
        const std::size_t set = set_of(key);
        const auto& ways = tags_[set].ways;
        for (std::size_t w = 0; w < kWays; ++w)
            if (ways[w].tick != 0 && ways[w].key == key) return &values_[set * kWays + w];
        return nullptr;
    }
    Value* find(std::uint64_t key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

    /// Sets `key`'s value, taking the place of the set's oldest entry if the key is new and the set full.
    Value& insert_or_assign(std::uint64_t key, Value value) {
        if (tags_.empty()) {  // on first use: most tables of a run stay empty
            tags_.resize(sets_);
            values_.resize(sets_ * kWays);
        }
        const std::size_t set = set_of(key);
        auto& ways = tags_[set].ways;
        std::size_t way = 0;
        for (std::size_t w = 0; w < kWays; ++w) {
            if (ways[w].tick != 0 && ways[w].key == key) {
                way = w;
                break;
            }
            if (ways[w].tick < ways[way].tick) way = w;  // an empty entry (tick 0) or an older one
        }
        auto& tag = ways[way];
        if (tag.tick == 0 || tag.key != key) tag = {key, ++tick_};
        auto& stored = values_[set * kWays + way];
        stored = std::move(value);
        return stored;
    }

    std::size_t capacity() const { return sets_ * kWays; }

private:
    // Keys and ages apart from the values: a set's four tags fill one cache
    // line (aligned to it: a vector of them is allocated on 64-byte boundaries),
    // so a lookup reads one line before the value it finds.
    struct Tag {
        std::uint64_t key = 0;
        std::uint64_t tick = 0;  // when the key was inserted; 0: empty
    };
    static constexpr std::size_t kCacheLine = 64;
    struct alignas(kCacheLine) TagSet {
        std::array<Tag, kWays> ways{};
    };
    static_assert(sizeof(TagSet) == kCacheLine && alignof(TagSet) == kCacheLine, "a set's tags are one cache line");

    std::size_t set_of(std::uint64_t key) const { return key & (sets_ - 1); }

    std::size_t sets_;
    std::uint64_t tick_ = 0;
    // The large ones in huge pages (core/huge_pages.hpp): looked up at random, they missed the TLB.
    std::vector<TagSet, HugePageAllocator<TagSet>> tags_;  // one per set
    std::vector<Value, HugePageAllocator<Value>> values_;  // kWays per set, in the order of the tags
};

}  // namespace spe
