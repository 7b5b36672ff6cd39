// Returning freed heap memory to the system after a burst of requests.
//
// (Measured with glibc's allocator; the release build links mimalloc, whose
// mi_collect does the same job: docs/benchmarks.md, connections.)
//
// Requests in flight allocate buffers, parsers and coroutine frames; freed,
// they stay resident in glibc's heap (free() only gives back the top of the
// heap), interleaved with what idle connections keep. Measured with 1,000
// idle keep-alive clients after 500 requests at once: 22 KB resident per idle
// client, 13.5 KB after malloc_trim(0), with 5.7 KB of it in use. So once the
// requests in flight fall to a quarter of their peak, the Multiplier calls
// malloc_trim(0) (a few milliseconds); under steady load it never does.
#pragma once

#include "context/server_context.hpp"

#include <cstddef>
#include <string>

namespace spe {

class TrimPolicy {
public:
    /// Bursts smaller than this leave too little behind to be worth a trim.
    static constexpr std::size_t kMinPeak = 16;

    /// Called periodically with the most requests in flight at once since the
    /// last call and the number in flight now; true: trim now.
    bool due(std::size_t peak_since_last, std::size_t in_flight_now);

private:
    std::size_t peak_ = 0;  // since the last trim
};

/// Gives back what a burst left: the heap's free pages (mi_collect with
/// mimalloc, malloc_trim with glibc).
void give_back_memory();

/// Resident set size of this process in KiB (0 if unknown).
long resident_kib();

/// Every second until the server stops: trims when the policy says so, on this
/// thread and on (one of) the fan-out's threads, whose read buffers and heap
/// are their own.
awaitable<void> trim_memory_after_bursts(std::shared_ptr<ServerContext> ctx, asio::io_context& fanout);

/// Which allocator serves malloc in this process, for the start-up log.
std::string heap_allocator();

}  // namespace spe
