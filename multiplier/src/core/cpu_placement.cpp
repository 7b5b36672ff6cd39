#include "core/cpu_placement.hpp"

#include "core/config.hpp"

#include <sched.h>

#include <charconv>
#include <thread>

namespace spe {

unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
}

unsigned parse_fanout_threads(const std::string& value) {
    if (value == "auto") return auto_fanout_threads(usable_cpus());
    unsigned n = 0;
    const auto* end = value.data() + value.size();
    if (const auto [at, ec] = std::from_chars(value.data(), end, n); ec != std::errc{} || at != end || n > 64)
        throw ConfigError("--fanout-threads must be auto or 0..64, got '" + value + "'");
    return n;
}

}  // namespace spe
