// The Multiplier's load as /metrics and the memory trimming read it: client
// connections open, client requests in flight, and the most in flight at once
// since last asked. Relaxed counts, kept by RAII holders.
#pragma once

#include <atomic>
#include <cstddef>

namespace spe {

class LoadCounters {
public:
    /// Client requests being answered or fanned out (see RequestCount).
    void request_started();
    void request_finished() { --requests_; }
    std::size_t requests_in_flight() const { return requests_.load(); }
    /// The most requests in flight at once since the last call (then restarts from now).
    std::size_t take_request_peak() { return request_peak_.exchange(requests_.load()); }
    /// Client connections open (for /metrics): one pair per connection.
    void connection_opened() { connections_.fetch_add(1, std::memory_order_relaxed); }
    void connection_closed() { connections_.fetch_sub(1, std::memory_order_relaxed); }
    std::size_t client_connections() const { return connections_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::size_t> requests_{0};
    std::atomic<std::size_t> request_peak_{0};
    std::atomic<std::size_t> connections_{0};
};

/// RAII count of one thing while it lives: `Up` when made, `Down` when gone.
template <void (LoadCounters::*Up)(), void (LoadCounters::*Down)()>
class ScopedCount {
public:
    explicit ScopedCount(LoadCounters& load) : load_(&load) { (load_->*Up)(); }
    ~ScopedCount() { (load_->*Down)(); }
    ScopedCount(const ScopedCount&) = delete;
    ScopedCount& operator=(const ScopedCount&) = delete;

private:
    LoadCounters* load_;
};

/// One open client connection (held by its session).
using ConnectionCount = ScopedCount<&LoadCounters::connection_opened, &LoadCounters::connection_closed>;
/// One client request in flight (held by its fan-out record, which lives from the Collector request to the
/// log), for memory trimming.
using RequestCount = ScopedCount<&LoadCounters::request_started, &LoadCounters::request_finished>;

}  // namespace spe
