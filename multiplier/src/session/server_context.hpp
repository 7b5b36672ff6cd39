// What every session shares: the validated config, resolved upstreams, the
// result log, counters, and the registry used to stop everything on SIGTERM.
#pragma once

#include "core/config.hpp"
#include "core/net.hpp"
#include "http/header_policy.hpp"
#include "session/client_order.hpp"
#include "session/reference_budget.hpp"

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace spe {

class CacheJudge;
class FetchMemory;
class ReplayStore;
class ResultLog;
class TlsInterceptor;

struct ResolvedProxy {
    std::string name;
    std::vector<tcp::endpoint> endpoints;
};

/// Something that can be cut short when the drain time is over (a client
/// session, a session's proxy connections). abort() may be called from any
/// thread; implementations post to their own strand.
class Abortable {
public:
    virtual ~Abortable() = default;
    virtual void abort() = 0;
};

class ServerContext {
public:
    /// `fanout` runs the proxies' legs (on threads of their own: see fanout_executor()).
    ServerContext(Config config, std::vector<tcp::endpoint> collector, std::vector<ResolvedProxy> proxies,
                  ResultLog& log, asio::io_context& fanout);
    ~ServerContext();
    ServerContext(const ServerContext&) = delete;
    ServerContext& operator=(const ServerContext&) = delete;

    const Config& config() const { return config_; }
    const HeaderPolicy& policy() const { return policy_; }
    const std::vector<tcp::endpoint>& collector() const { return collector_; }
    const std::vector<ResolvedProxy>& proxies() const { return proxies_; }
    ResultLog& log() { return log_; }
    /// The cache-rule judge, or nullptr with --no-cache-judge.
    CacheJudge* cache_judge() { return cache_judge_.get(); }
    /// The first reply a client got from each recent origin fetch, for the validator.
    FetchMemory& fetch_memory() { return *fetch_memory_; }
    /// HTTPS interception (leaf certificates, which tunnels stay opaque), or nullptr without --intercept-tls.
    TlsInterceptor* interceptor() { return interceptor_.get(); }
    /// The client's replies to unsafe requests, for the proxies' copies; nullptr unless --unsafe-requests replay.
    const std::shared_ptr<ReplayStore>& replay_store() const { return replay_store_; }
    /// Memory for the Collector's bodies kept while relayed and for the proxies' comparisons (--reference-bytes).
    ReferenceBudget& reference_budget() { return reference_budget_; }
    /// Each client's order across its connections (--order client).
    ClientOrders& client_orders() { return client_orders_; }

    /// Where the proxy legs of the client connection on `client` run: an
    /// io_context apart from the clients', so a fan-out's work (connects to a
    /// refusing proxy, a huge header, an endless body) never waits in line
    /// before a client's reply. A strand when the fan-out has several threads;
    /// with one, the io_context's own executor (an implicit strand, without a
    /// heap allocation per copy); with --fanout-threads 0, `client` itself (the
    /// legs share the client's thread: less CPU per request, no isolation).
    asio::any_io_executor fanout_executor(const asio::any_io_executor& client);

    std::uint64_t next_request_id() { return ++last_id_; }
    /// The X-SPE-Request tag of request `id`: unique across Multiplier processes.
    std::string request_tag(std::uint64_t id) const;
    /// First proxy of the fan-out for the next request: rotates so no proxy
    /// always goes first.
    std::size_t next_rotation() { return rotation_++; }

    bool stopping() const { return stopping_.load(); }
    void set_stopping() { stopping_.store(true); }

    /// Work that keeps a graceful stop waiting (open sessions, fan-outs not logged).
    void work_started() { ++unfinished_work_; }
    void work_finished() { --unfinished_work_; }
    int unfinished_work() const { return unfinished_work_.load(); }

    void register_abortable(const std::shared_ptr<Abortable>& a);
    void abort_all();

    /// Client requests being answered or fanned out (see RequestCount).
    void request_started();
    void request_finished() { --requests_; }
    std::size_t requests_in_flight() const { return requests_.load(); }
    /// Client connections open (for /metrics): relaxed counts, one pair per connection.
    void connection_opened() { connections_.fetch_add(1, std::memory_order_relaxed); }
    void connection_closed() { connections_.fetch_sub(1, std::memory_order_relaxed); }
    std::size_t client_connections() const { return connections_.load(std::memory_order_relaxed); }
    /// The most requests in flight at once since the last call (then restarts from now).
    std::size_t take_request_peak() { return request_peak_.exchange(requests_.load()); }

private:
    Config config_;
    HeaderPolicy policy_;
    std::vector<tcp::endpoint> collector_;
    std::vector<ResolvedProxy> proxies_;
    ResultLog& log_;
    std::unique_ptr<CacheJudge> cache_judge_;
    std::unique_ptr<FetchMemory> fetch_memory_;
    std::unique_ptr<TlsInterceptor> interceptor_;
    std::shared_ptr<ReplayStore> replay_store_;
    ReferenceBudget reference_budget_;
    ClientOrders client_orders_;
    asio::io_context& fanout_;
    const std::string process_tag_;  // random, the first part of every request tag
    std::atomic<std::uint64_t> last_id_{0};
    std::atomic<std::size_t> rotation_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<int> unfinished_work_{0};  // WorkGuards alive
    std::atomic<std::size_t> requests_{0};
    std::atomic<std::size_t> request_peak_{0};
    std::atomic<std::size_t> connections_{0};
    std::mutex abortables_mutex_;
    std::vector<std::weak_ptr<Abortable>> abortables_;
};

/// RAII count of one unit of in-flight work.
class WorkGuard {
public:
    explicit WorkGuard(ServerContext& ctx) : ctx_(&ctx) { ctx_->work_started(); }
    ~WorkGuard() {
        if (ctx_) ctx_->work_finished();
    }
    WorkGuard(WorkGuard&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
    WorkGuard(const WorkGuard&) = delete;
    WorkGuard& operator=(const WorkGuard&) = delete;
    WorkGuard& operator=(WorkGuard&&) = delete;

private:
    ServerContext* ctx_;
};

/// RAII count of one open client connection (held by its session).
class ConnectionCount {
public:
    explicit ConnectionCount(ServerContext& ctx) : ctx_(&ctx) { ctx_->connection_opened(); }
    ~ConnectionCount() { ctx_->connection_closed(); }
    ConnectionCount(const ConnectionCount&) = delete;
    ConnectionCount& operator=(const ConnectionCount&) = delete;

private:
    ServerContext* ctx_;
};

/// RAII count of one client request in flight (held by its fan-out record,
/// which lives from the Collector request to the log), for memory trimming.
class RequestCount {
public:
    explicit RequestCount(ServerContext& ctx) : ctx_(&ctx) { ctx_->request_started(); }
    ~RequestCount() { ctx_->request_finished(); }
    RequestCount(const RequestCount&) = delete;
    RequestCount& operator=(const RequestCount&) = delete;

private:
    ServerContext* ctx_;
};

}  // namespace spe
