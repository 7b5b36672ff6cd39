#include "fanout/proxy_leg.hpp"

namespace spe {

awaitable<void> run_proxy_leg(UpstreamConnection& conn, const WireRequest& req, bool head_request,
                              ProxyLegLimits limits, const HeaderPolicy& policy, Measure& m) {
    const auto t0 = Clock::now();
    const auto deadline = t0 + limits.timeout;
    if (auto e = co_await conn.send(req, t0, deadline, m); e != LegError::none) {
        m.error = e;
        m.total_us = micros_since(conn.started());
        co_return;
    }
    const auto end = co_await read_proxy_reply(conn.stream(), conn.buffer(), m, head_request, limits, policy,
                                               conn.started(), deadline);
    if (!end.whole) {
        conn.close();
        co_return;
    }
    conn.end_reply(end.keep_alive);
    if (conn.bytes_after_reply()) {
        m.error = LegError::extra_data;
        m.error_detail = "bytes followed the end of the reply";
    }
}

}  // namespace spe
