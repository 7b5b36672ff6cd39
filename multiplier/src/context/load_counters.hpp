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

/// RAII count of one open client connection (held by its session).
class ConnectionCount {
public:
    explicit ConnectionCount(LoadCounters& load) : load_(&load) { load_->connection_opened(); }
    ~ConnectionCount() { load_->connection_closed(); }
    ConnectionCount(const ConnectionCount&) = delete;
    ConnectionCount& operator=(const ConnectionCount&) = delete;

private:
    LoadCounters* load_;
};

/// RAII count of one client request in flight (held by its fan-out record,
/// which lives from the Collector request to the log), for memory trimming.
class RequestCount {
public:
    explicit RequestCount(LoadCounters& load) : load_(&load) { load_->request_started(); }
    ~RequestCount() { load_->request_finished(); }
    RequestCount(const RequestCount&) = delete;
    RequestCount& operator=(const RequestCount&) = delete;

private:
    LoadCounters* load_;
};

}  // namespace spe
