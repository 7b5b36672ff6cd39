// The Collector's bodies kept for the proxies' comparisons (http/expected_body_digest.hpp) and hashed
// once whole (KeptBody), within one budget for the whole process (--reference-bytes). Comparing instead
// of hashing pays most on large bodies, and a kept body costs memory only while its relay and fan-out
// run: so the bound is on their sum, and one body may take at most a quarter of it. A body the budget
// cannot hold is hashed as it passes, and by every leg.
#pragma once

#include "http/expected_body_digest.hpp"
#include "http/md5_digest.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace spe {

class ReferenceBudget {
public:
    explicit ReferenceBudget(std::uint64_t bytes) : limit_(bytes) {}
    ReferenceBudget(const ReferenceBudget&) = delete;
    ReferenceBudget& operator=(const ReferenceBudget&) = delete;

    /// Takes `n` bytes if that many are left; false otherwise (nothing taken).
    bool take(std::uint64_t n);
    void give_back(std::uint64_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
    std::uint64_t in_use() const { return used_.load(std::memory_order_relaxed); }
    /// The most one body may take.
    std::uint64_t per_body() const { return limit_ / 4; }

private:
    const std::uint64_t limit_;
    std::atomic<std::uint64_t> used_{0};
};

/// One Collector body as it is relayed: kept within the budget, and its MD5. It stops keeping (and gives
/// its bytes back) as soon as the budget cannot hold it. A kept body is hashed once it is whole, after the
/// client has it all: hashed piece by piece between the client's writes, the MD5 paced the relay of a
/// large body (about 2 ms per MB, all of it added to the client's wait). A body the budget cannot hold
/// is hashed as it passes (the part kept until then first). `budget` must outlive every body kept.
class KeptBody {
public:
    /// `length`: the body's length when its header says it (taken from the budget at once).
    KeptBody(ReferenceBudget& budget, std::optional<std::uint64_t> length);
    ~KeptBody();
    KeptBody(const KeptBody&) = delete;
    KeptBody& operator=(const KeptBody&) = delete;

    void append(const char* data, std::size_t size);
    /// The bytes appended so far (until finish): those kept, or all of them hashed once keeping stopped.
    std::uint64_t bytes() const { return keeping_ ? bytes_.size() : digest_.bytes(); }
    /// The lowercase hex MD5 of every byte appended; call once, when the body is whole.
    std::string md5();
    /// The whole body with its MD5, or null when it was not kept; its bytes go back to the
    /// budget when the last holder lets go.
    std::shared_ptr<const ReferenceBody> finish(std::string md5);

private:
    void give_up();

    ReferenceBudget& budget_;
    bool keeping_ = true;
    std::uint64_t taken_ = 0;  // from the budget, for this body
    std::string bytes_;
    Md5Digest digest_;  // of the bytes not kept (all of them once keeping stopped)
};

}  // namespace spe
