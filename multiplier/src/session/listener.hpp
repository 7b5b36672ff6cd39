// Accepts client connections, applies the allow-list, and starts one
// DownstreamSession per connection on a strand of its own (with one I/O
// thread, the io_context's executor: the thread is the strand). The acceptor
// has a strand of its own too: the accept loop and stop() (from the signal
// handler, on any I/O thread) both run on it, so closing the acceptor never
// races an accept, and the session list needs no lock.
#pragma once

#include "context/server_context.hpp"

#include <memory>

namespace spe {

class DownstreamSession;

class Listener : public std::enable_shared_from_this<Listener> {
public:
    /// Binds and listens; throws boost::system::system_error with the cause.
    Listener(asio::io_context& ioc, std::shared_ptr<ServerContext> ctx);

    void start();
    /// Stops accepting and asks idle sessions to close (SIGINT/SIGTERM).
    void stop();

private:
    /// An accepted connection: a session of its own, or refused when its peer is not in --allow.
    void admit(tcp::socket socket);
    awaitable<void> refuse_client(tcp::socket socket);

    asio::io_context& ioc_;
    std::shared_ptr<ServerContext> ctx_;
    asio::any_io_executor strand_;  // the acceptor's and the session list's
    tcp::acceptor acceptor_;
    std::vector<std::weak_ptr<DownstreamSession>> sessions_;
};

}  // namespace spe
