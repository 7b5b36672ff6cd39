// Closing a client connection after an error reply without destroying it.
//
// When the Multiplier refuses a request (400, 413, 431...) the client may be
// still sending: the rest of a body too large, or pipelined requests. Closing
// a socket with unread bytes makes Linux send a reset at once, and a client
// that receives it before reading our reply loses the reply (the usual case
// for a client that sends its whole body before it reads). RFC 9112 9.6:
// half-close the write side, read and discard what the client still sends,
// and close when it closes or after a bounded time and number of bytes.
#pragma once

#include "io/timed_stream.hpp"

#include <cstdint>

namespace spe {

struct LingerLimits {
    Clock::duration max_time = std::chrono::seconds(5);
    std::uint64_t max_bytes = 64ull << 20;
};

/// Half-closes, discards the client's bytes until it closes or a limit is
/// reached, then closes the socket. Returns the bytes discarded.
awaitable<std::uint64_t> lingering_close(TimedStream& stream, LingerLimits limits);

}  // namespace spe
