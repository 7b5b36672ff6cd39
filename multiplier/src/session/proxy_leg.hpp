// One request to one proxy under test: send it, read the whole reply through
// a digesting body (nothing is kept but the first bytes for captures), measure.
#pragma once

#include "core/measurement.hpp"
#include "http/header_policy.hpp"
#include "io/upstream_connection.hpp"
#include "session/proxy_reply.hpp"  // ProxyLegLimits

#include <optional>

namespace spe {

/// Coroutine: `limits` is taken by value; `conn`, `req` and `policy` must outlive it.
awaitable<Measure> run_proxy_leg(UpstreamConnection& conn, const WireRequest& req, bool head_request,
                                 ProxyLegLimits limits, const HeaderPolicy& policy);

}  // namespace spe
