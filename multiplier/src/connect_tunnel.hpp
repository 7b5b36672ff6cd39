// CONNECT: a tunnel to the Collector, logged but not multiplied (the bytes are
// TLS the Multiplier cannot read or replay).
#pragma once

#include "measurement.hpp"
#include "server_context.hpp"
#include "timed_stream.hpp"

#include "read_buffer.hpp"

namespace spe {

/// Runs the tunnel until both directions end. Returns the status sent to the
/// client when the tunnel could not be opened (0 once it was), with the reason.
struct TunnelOutcome {
    unsigned refused_status = 0;
    std::string reason;
};

awaitable<TunnelOutcome> run_connect_tunnel(TimedStream& client, ReadBuffer& client_buffer, const Request& req,
                                            ServerContext& ctx, RequestRecord& record);

}  // namespace spe
