// One request to one proxy under test: send it, read the whole reply through
// a digesting body (nothing is kept but the first bytes for captures), measure.
#pragma once

#include "core/measurement.hpp"
#include "http/header_policy.hpp"
#include "http/read_proxy_reply.hpp"  // ProxyLegLimits
#include "io/upstream_connection.hpp"

#include <optional>

namespace spe {

/// Coroutine measuring into `m` (a fresh Measure), in place: a Measure is large, and a result moved
/// out of the coroutine's frame and again into the record costs more than the leg's bookkeeping.
/// `limits` is taken by value; `conn`, `req`, `policy` and `m` must outlive it.
awaitable<void> run_proxy_leg(UpstreamConnection& conn, const WireRequest& req, bool head_request,
                              ProxyLegLimits limits, const HeaderPolicy& policy, Measure& m);

}  // namespace spe
