#include "context/load_counters.hpp"

namespace spe {

void LoadCounters::request_started() {
    const auto now = ++requests_;
    auto peak = request_peak_.load();
    while (peak < now && !request_peak_.compare_exchange_weak(peak, now)) {
    }
}

}  // namespace spe
