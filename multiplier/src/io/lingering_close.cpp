#include "io/lingering_close.hpp"

#include <array>

namespace spe {

awaitable<std::uint64_t> lingering_close(TimedStream& stream, LingerLimits limits) {
    error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    std::array<char, 16 * 1024> sink{};
    std::uint64_t discarded = 0;
    // One deadline for the whole linger, not one per read: a client trickling
    // bytes cannot hold the connection longer.
    stream.expires_after(limits.max_time);
    while (!ec && discarded < limits.max_bytes)
        discarded += co_await stream.async_read_some(asio::buffer(sink), with_ec(ec));
    stream.close();
    co_return discarded;
}

}  // namespace spe
