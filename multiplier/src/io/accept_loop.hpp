// What the Multiplier's three listeners share (the proxy port, the replay port,
// the metrics port): the acceptor's setup and the accept loop. What a server
// does with a connection (its allow-list, its own handler) and which executor
// a connection runs on stay the server's.
#pragma once

#include "core/net.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string_view>

namespace spe {

/// Opens `acceptor` for `at`, with SO_REUSEADDR (a restarted Multiplier binds at
/// once, past its old connections in TIME_WAIT), binds and listens.
/// Throws boost::system::system_error with the cause.
void listen_on(tcp::acceptor& acceptor, const tcp::endpoint& at);

/// Accepts until the acceptor is closed (or its accept cancelled), on the
/// acceptor's executor. Each connection's socket is made on the executor
/// `executor_for_next()` returns, then handed to `admit`. A failed accept (out
/// of file descriptors and the like) is logged as "<log_prefix>accept failed:
/// ..." and followed by a pause of 100 ms, so the loop neither stops nor spins.
/// The acceptor must outlive the loop: `admit` may hold its owner.
awaitable<void> accept_until_closed(tcp::acceptor& acceptor, std::string_view log_prefix,
                                    std::function<asio::any_io_executor()> executor_for_next,
                                    std::function<void(tcp::socket)> admit);

}  // namespace spe
