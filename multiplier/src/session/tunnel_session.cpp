#include "session/tunnel_session.hpp"

#include "log/result_log.hpp"
#include "tunnel/upgrade_tunnel.hpp"

#include <utility>

namespace spe {

awaitable<std::optional<Refused>> TunnelSession::connect(const TunnelRequest& tunnel, RequestRecord& record) {
    auto refused =
        co_await run_connect_tunnel(client_.transport, client_.buffer, tunnel, ctx_.config(), ctx_.collector(), record);
    if (refused && !tunnel.established) co_return refused;
    // The client has its 200 already: closing is all that is left to tell it.
    if (refused) record.note = "CONNECT (" + tunnel.why + "): " + refused->reason + "; the connection was closed";
    ctx_.log().write(record);
    co_return std::nullopt;
}

awaitable<std::optional<Refused>> TunnelSession::upgrade(const Request& request, Request upstream,
                                                         RequestRecord& record) {
    auto refused = co_await run_upgrade_tunnel(client_.stream, client_.buffer, request, std::move(upstream),
                                               ctx_.config(), ctx_.collector(), record);
    if (!refused) ctx_.log().write(record);
    co_return refused;
}

}  // namespace spe
