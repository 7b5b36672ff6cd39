// One request to one proxy under test: send it, read the whole reply through
// a digesting body (nothing is kept but the first bytes for captures), measure.
#pragma once

#include "core/measurement.hpp"
#include "http/header_policy.hpp"
#include "io/upstream_connection.hpp"

#include <optional>

namespace spe {

struct ProxyLegLimits {
    std::chrono::milliseconds timeout;      // whole leg, connect to last byte
    std::optional<std::uint64_t> body_cap;  // bytes past this end the read
    std::size_t max_header_bytes = 64 * 1024;
    std::size_t capture_body_bytes = 0;  // 0: no capture
    bool cache_fields = false;           // take the fields the cache-rule judge reads
};

/// Coroutine: `limits` is taken by value; `conn`, `req` and `policy` must outlive it.
awaitable<Measure> run_proxy_leg(UpstreamConnection& conn, const WireRequest& req, bool head_request,
                                 ProxyLegLimits limits, const HeaderPolicy& policy);

}  // namespace spe
