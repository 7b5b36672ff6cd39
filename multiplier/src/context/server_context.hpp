// What every session shares: the validated config, resolved upstreams, the
// result log, the judge and the other services sessions use, how to stop, and the load counters.
//
// Why one context and not a narrower view per session: a client connection's
// objects are made per connection and hand the context on down their chain
// (listener -> downstream or intercept session -> collector leg and fan-out ->
// proxy legs), each taking what it needs from it; a view per consumer would
// thread the same references through every constructor on that chain. The
// context holds no logic of its own: each service is a class in its own header
// (the judge, the fetch memory, the interceptor, the replay store, the budgets,
// the client orders, stopping, the load counters), created once here.
#pragma once

#include "context/client_order.hpp"
#include "context/load_counters.hpp"
#include "context/reference_budget.hpp"
#include "context/stop_control.hpp"
#include "core/config.hpp"
#include "core/net.hpp"
#include "http/header_policy.hpp"

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <memory>
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

    /// Stopping: the flag, the work a graceful stop waits for, what is aborted when the drain time is over.
    StopControl& stop() { return stop_; }
    /// Client connections and requests in flight, for /metrics and the memory trimming.
    LoadCounters& load() { return load_; }

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
    StopControl stop_;
    LoadCounters load_;
};

}  // namespace spe
