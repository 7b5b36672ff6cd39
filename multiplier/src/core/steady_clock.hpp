// The monotonic clock of every deadline and measured interval (times to first
// byte, totals), apart from the wall clock of the records (wall_clock.hpp).
// Without Asio: the pure message code (http/, judge/) builds without
// coroutines, as the fuzz targets need.
#pragma once

#include <chrono>
#include <cstdint>

namespace spe {

using Clock = std::chrono::steady_clock;

inline std::int64_t micros_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

}  // namespace spe
