#include "context/memory_trim.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <fstream>

#include <unistd.h>

#if defined(SPE_MIMALLOC)
#include <mimalloc.h>

#include <cstdlib>
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

namespace spe {

long resident_kib() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

void give_back_memory() {
#if defined(SPE_MIMALLOC)
    mi_collect(true);
#elif defined(__GLIBC__)
    malloc_trim(0);
#endif
}

std::string heap_allocator() {
#if defined(SPE_MIMALLOC)
    // Linked ahead of libc, mimalloc serves every malloc; checked, not assumed.
    void* probe = std::calloc(1, 64);
    const bool serves_malloc = mi_is_in_heap_region(probe);
    std::free(probe);
    const int v = mi_version();
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10) +
           (serves_malloc ? "" : " (linked, but NOT serving malloc: glibc's allocator is in use)");
#elif defined(__GLIBC__)
    return "glibc malloc";
#else
    return "the C library's malloc";
#endif
}

bool TrimPolicy::due(std::size_t peak_since_last, std::size_t in_flight_now) {
    peak_ = std::max(peak_, peak_since_last);
    if (peak_ < kMinPeak || in_flight_now * 4 > peak_) return false;
    peak_ = in_flight_now;
    return true;
}

awaitable<void> trim_memory_after_bursts(std::shared_ptr<ServerContext> ctx, asio::io_context& fanout) {
    asio::steady_timer tick(co_await asio::this_coro::executor);
    TrimPolicy policy;
    error_code ec;
    while (!ctx->stop().stopping()) {
        tick.expires_after(std::chrono::seconds(1));
        co_await tick.async_wait(with_ec(ec));
        const auto now = ctx->load().requests_in_flight();
        if (!policy.due(ctx->load().take_request_peak(), now)) continue;
        const auto before = resident_kib();
        const auto t0 = Clock::now();
        asio::post(fanout, [] { give_back_memory(); });
        give_back_memory();
        spdlog::debug("after a burst of requests ({} in flight now): the heap returned {} KiB in {} us", now,
                      before - resident_kib(), micros_since(t0));
    }
}

}  // namespace spe
