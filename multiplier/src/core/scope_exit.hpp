// Runs a callable when the scope ends, however it ends (a return, an exception, a coroutine destroyed while
// suspended): e.g. a waiting coroutine unlisting the observer of its own timer before the timer goes.
#pragma once

#include <utility>

namespace spe {

template <class F>
class ScopeExit {
public:
    explicit ScopeExit(F f) : f_(std::move(f)) {}
    ~ScopeExit() { f_(); }
    ScopeExit(const ScopeExit&) = delete;
    ScopeExit& operator=(const ScopeExit&) = delete;

private:
    F f_;
};

}  // namespace spe
