// The one wall clock of the records: unix seconds (request times, leg start
// times, the judge's notes), comparable with the Collector's stamps.
#pragma once

#include <chrono>

namespace spe {

inline double unix_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace spe
