// The metrics listener (--metrics-listen): GET /metrics answers the
// Prometheus text format (run_metrics.hpp), anything else 404 (405 for
// another method). It runs on a thread and an io_context of its own, so a
// scrape (or a slow or hostile client of this port) never takes a turn on the
// data path's threads; a client outside --metrics-allow (loopback by default)
// has its connection closed at once.
#pragma once

#include "core/allow_list.hpp"
#include "core/net.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace spe {

class TimedStream;

struct MetricsLimits {
    std::size_t max_header_bytes = 8 * 1024;
    std::chrono::milliseconds deadline{5'000};  // each read and write, and the wait for the next request
    unsigned max_connections = 16;              // beyond it, a new connection is closed at once
};

class MetricsServer {
public:
    /// Binds and listens (throws boost::system::system_error with the cause); starts its thread.
    /// `page` renders the body of a scrape, on the server's thread.
    MetricsServer(const tcp::endpoint& at, AllowList allow, std::function<std::string()> page,
                  MetricsLimits limits = {});
    ~MetricsServer();  // stops and joins
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

private:
    /// An accepted connection: closed unless its peer is in the allow-list and there is room for it.
    void admit(tcp::socket socket);
    awaitable<void> serve(tcp::socket socket);
    /// One request on the connection; false when the connection is done.
    awaitable<bool> serve_one(TimedStream& stream, beast::flat_buffer& buffer);

    asio::io_context ioc_{1};
    tcp::acceptor acceptor_;
    AllowList allow_;
    std::function<std::string()> page_;
    MetricsLimits limits_;
    unsigned connections_ = 0;  // on the server's one thread
    std::thread thread_;
};

}  // namespace spe
