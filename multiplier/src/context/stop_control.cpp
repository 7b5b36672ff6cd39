#include "context/stop_control.hpp"

#include <algorithm>

namespace spe {

void StopControl::register_abortable(const std::shared_ptr<Abortable>& a) {
    std::lock_guard lock(abortables_mutex_);
    // Drop entries whose owner is gone, so the registry stays as small as the live set.
    if (abortables_.size() >= 64 && abortables_.size() % 64 == 0)
        std::erase_if(abortables_, [](const auto& w) { return w.expired(); });
    abortables_.push_back(a);
}

void StopControl::abort_all() {
    std::vector<std::shared_ptr<Abortable>> live;
    {
        std::lock_guard lock(abortables_mutex_);
        for (auto& w : abortables_)
            if (auto a = w.lock()) live.push_back(std::move(a));
    }
    for (auto& a : live)
        a->abort();
}

}  // namespace spe
