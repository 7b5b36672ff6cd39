// The replay port (--replay-listen): where the Collector sends the proxies'
// copies of unsafe requests instead of the origin (its template routes every
// unsafe method on a proxy's port to this parent, never direct). Each copy is
// answered from the reply the client got (ReplayStore), after the client's
// time to first byte, or refused with 502 and X-SPE-Replay-Refused naming why;
// nothing here ever reaches an origin. Loopback peers only: it is the
// Collector's parent, not a proxy for anyone.
#pragma once

#include "core/net.hpp"
#include "replay/replay_store.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <memory>

namespace spe {

class TimedStream;

struct ReplayLimits {
    std::size_t max_header_bytes = 64 * 1024;
    std::uint64_t max_request_body = 64ull << 20;
    std::chrono::milliseconds idle_timeout{60'000};  // a read, a write, or the wait between requests
};

class ReplayServer : public std::enable_shared_from_this<ReplayServer> {
public:
    /// Binds and listens; throws boost::system::system_error with the cause.
    ReplayServer(asio::io_context& ioc, const tcp::endpoint& at, std::shared_ptr<ReplayStore> store,
                 ReplayLimits limits);

    void start();
    void stop();
    tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

private:
    /// An accepted connection: served on its own strand, or closed when its peer is not on loopback.
    void admit(tcp::socket socket);
    awaitable<void> serve(tcp::socket socket);
    /// One request on the connection; false when the connection is done.
    awaitable<bool> serve_one(TimedStream& stream, beast::flat_buffer& buffer);
    /// A copy whose body is over the limit: refused (the connection then closes, the body unread).
    awaitable<bool> refuse_too_large(TimedStream& stream);

    asio::io_context& ioc_;
    tcp::acceptor acceptor_;
    std::shared_ptr<ReplayStore> store_;
    ReplayLimits limits_;
};

}  // namespace spe
