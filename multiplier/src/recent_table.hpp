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

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
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
        if (entries_.empty()) return nullptr;
        for (const auto& e : set_of(key))
            if (e.tick != 0 && e.key == key) return &e.value;
        return nullptr;
    }
    Value* find(std::uint64_t key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

    /// Sets `key`'s value, taking the place of the set's oldest entry if the key is new and the set full.
    Value& insert_or_assign(std::uint64_t key, Value value) {
        if (entries_.empty()) entries_.resize(sets_ * kWays);  // on first use: most tables of a run stay empty
        auto set = set_of(key);
        Entry* slot = &set[0];
        for (auto& e : set) {
            if (e.tick != 0 && e.key == key) {
                slot = &e;
                break;
            }
            if (e.tick < slot->tick) slot = &e;  // an empty entry (tick 0) or an older one
        }
        if (slot->tick == 0 || slot->key != key) slot->tick = ++tick_;
        slot->key = key;
        slot->value = std::move(value);
        return slot->value;
    }

    std::size_t capacity() const { return sets_ * kWays; }

private:
    struct Entry {
        std::uint64_t key = 0;
        std::uint64_t tick = 0;  // when the key was inserted; 0: empty
        Value value{};
    };

    std::span<Entry> set_of(std::uint64_t key) { return {entries_.data() + (key & (sets_ - 1)) * kWays, kWays}; }
    std::span<const Entry> set_of(std::uint64_t key) const {
        return {entries_.data() + (key & (sets_ - 1)) * kWays, kWays};
    }

    std::size_t sets_;
    std::uint64_t tick_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace spe
