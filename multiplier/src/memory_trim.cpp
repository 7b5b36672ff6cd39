#include "memory_trim.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace spe {
namespace {

/// Resident set size in KiB, for the log (0 if unknown).
long rss_kib() {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * 4;
}

}  // namespace

bool TrimPolicy::due(std::size_t peak_since_last, std::size_t in_flight_now) {
    peak_ = std::max(peak_, peak_since_last);
    if (peak_ < kMinPeak || in_flight_now * 4 > peak_) return false;
    peak_ = in_flight_now;
    return true;
}

awaitable<void> trim_memory_after_bursts(std::shared_ptr<ServerContext> ctx) {
    asio::steady_timer tick(co_await asio::this_coro::executor);
    TrimPolicy policy;
    error_code ec;
    while (!ctx->stopping()) {
        tick.expires_after(std::chrono::seconds(1));
        co_await tick.async_wait(with_ec(ec));
        const auto now = ctx->requests_in_flight();
        if (!policy.due(ctx->take_request_peak(), now)) continue;
#if defined(__GLIBC__)
        const auto before = rss_kib();
        const auto t0 = Clock::now();
        malloc_trim(0);
        spdlog::debug("after a burst of requests ({} in flight now): malloc_trim returned {} KiB in {} us", now,
                      before - rss_kib(), micros_since(t0));
#endif
    }
}

}  // namespace spe
