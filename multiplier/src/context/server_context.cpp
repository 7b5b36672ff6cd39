#include "context/server_context.hpp"
#include "replay/replay_store.hpp"

#include "judge/cache_judge.hpp"
#include "judge/fetch_memory.hpp"

#include "http/request_policy.hpp"
#include "tls/tls_interceptor.hpp"

#include <boost/asio/strand.hpp>

namespace spe {

namespace {
std::vector<std::string> ignore_list(const Config& c) {
    auto names = default_ignored_headers();
    names.insert(names.end(), c.ignore_headers.begin(), c.ignore_headers.end());
    return names;
}
}  // namespace

ServerContext::ServerContext(Config config, std::vector<tcp::endpoint> collector, std::vector<ResolvedProxy> proxies,
                             ResultLog& log, asio::io_context& fanout)
    : config_(std::move(config)),
      policy_(config_.compare_headers, ignore_list(config_)),
      collector_(std::move(collector)),
      proxies_(std::move(proxies)),
      log_(log),
      reference_budget_(config_.reference_bytes),
      client_orders_(proxies_.size()),
      fanout_(fanout),
      process_tag_(process_tag(config_.tag_prefix)) {
    fetch_memory_ = std::make_unique<FetchMemory>();
    if (config_.cache_judge) {
        std::vector<std::string> names;
        for (const auto& p : proxies_)
            names.push_back(p.name);
        cache_judge_ = std::make_unique<CacheJudge>(std::move(names));
    }
    if (config_.intercept_tls) {
        LeafLimits leaves;
        leaves.validity = config_.leaf_validity;
        interceptor_ =
            std::make_unique<TlsInterceptor>(CertificateAuthority::load(config_.ca_dir), config_.no_intercept, leaves);
    }
    if (config_.unsafe_requests == UnsafeRequests::replay)
        replay_store_ = std::make_shared<ReplayStore>(config_.replay_ttl, config_.replay_store_bytes);
}

ServerContext::~ServerContext() = default;

std::string ServerContext::request_tag(std::uint64_t id) const {
    return spe::request_tag(process_tag_, id);
}

asio::any_io_executor ServerContext::fanout_executor(const asio::any_io_executor& client) {
    if (config_.fanout_threads == 0) return client;
    if (config_.fanout_threads == 1) return fanout_.get_executor();
    return asio::make_strand(fanout_);
}

}  // namespace spe
