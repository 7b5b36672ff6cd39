// How the Multiplier stops: the flag every loop checks, the work a graceful
// stop waits for (open sessions, fan-outs not logged), and the registry of
// what is cut short when the drain time is over.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace spe {

/// Something that can be cut short when the drain time is over (a client
/// session, a session's proxy connections). abort() may be called from any
/// thread; implementations post to their own strand.
class Abortable {
public:
    virtual ~Abortable() = default;
    virtual void abort() = 0;
};

class StopControl {
public:
    bool stopping() const { return stopping_.load(); }
    void set_stopping() { stopping_.store(true); }

    /// Work that keeps a graceful stop waiting (see WorkGuard).
    void work_started() { ++unfinished_work_; }
    void work_finished() { --unfinished_work_; }
    int unfinished_work() const { return unfinished_work_.load(); }

    void register_abortable(const std::shared_ptr<Abortable>& a);
    void abort_all();

private:
    std::atomic<bool> stopping_{false};
    std::atomic<int> unfinished_work_{0};  // WorkGuards alive
    std::mutex abortables_mutex_;
    std::vector<std::weak_ptr<Abortable>> abortables_;
};

/// RAII count of one unit of in-flight work.
class WorkGuard {
public:
    explicit WorkGuard(StopControl& stop) : stop_(&stop) { stop_->work_started(); }
    ~WorkGuard() {
        if (stop_) stop_->work_finished();
    }
    WorkGuard(WorkGuard&& o) noexcept : stop_(std::exchange(o.stop_, nullptr)) {}
    WorkGuard(const WorkGuard&) = delete;
    WorkGuard& operator=(const WorkGuard&) = delete;
    WorkGuard& operator=(WorkGuard&&) = delete;

private:
    StopControl* stop_;
};

}  // namespace spe
