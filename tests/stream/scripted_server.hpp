// A one-connection-at-a-time loopback server that answers each request with a
// scripted sequence of byte writes (fragmented as asked), pauses, a close or a
// reset: the faults a proxy under test can commit, reproduced exactly.
#pragma once

#include "core/net.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <string>
#include <vector>

namespace spe::test {

struct Step {
    enum Kind { send, pause, close, reset, hang } kind = send;
    std::string bytes;
    std::size_t piece = 0;  // 0: one write; else write this many bytes at a time
    std::chrono::milliseconds delay{0};
};

inline Step send_bytes(std::string b, std::size_t piece = 0) {
    return {Step::send, std::move(b), piece, {}};
}
inline Step pause_for(std::chrono::milliseconds d) {
    return {Step::pause, {}, 0, d};
}
inline Step close_conn() {
    return {Step::close, {}, 0, {}};
}
inline Step reset_conn() {
    return {Step::reset, {}, 0, {}};
}
inline Step hang_conn() {
    return {Step::hang, {}, 0, {}};
}

/// Serves `scripts[i]` to the i-th request (over any number of connections).
class ScriptedServer {
public:
    ScriptedServer(asio::io_context& ioc, std::vector<std::vector<Step>> scripts);
    tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }
    std::size_t requests_seen() const { return served_; }
    std::size_t connections_accepted() const { return accepted_; }
    void stop();

private:
    awaitable<void> accept_loop();
    awaitable<void> serve(tcp::socket socket);

    asio::io_context& ioc_;
    tcp::acceptor acceptor_;
    std::vector<std::vector<Step>> scripts_;
    std::size_t served_ = 0;
    std::size_t accepted_ = 0;
    std::vector<std::shared_ptr<tcp::socket>> hung_;
};

}  // namespace spe::test
