// Where the fan-out runs by default: on a thread of its own only when the
// Multiplier may use more than one CPU. On one CPU a second thread isolates
// nothing (the client's work still waits for the core) and costs a hand-over,
// a wake-up and often a context switch per request (docs/benchmarks.md).
#pragma once

#include <string>

namespace spe {

/// The CPUs this process may run on (its affinity mask, as taskset or a cpuset sets it); at least 1.
unsigned usable_cpus();

/// --fanout-threads auto: 1 (a thread of its own) with two or more usable CPUs, else 0 (the clients' thread).
constexpr unsigned auto_fanout_threads(unsigned cpus) {
    return cpus >= 2 ? 1 : 0;
}

/// The value of --fanout-threads: "auto", or a count 0..64 (ConfigError otherwise).
unsigned parse_fanout_threads(const std::string& value);

}  // namespace spe
