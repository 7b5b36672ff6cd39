#include "fanout/client_fanouts.hpp"

#include <boost/asio/post.hpp>

namespace spe {

ClientFanouts::ClientFanouts(asio::any_io_executor strand, const std::vector<ResolvedProxy>& proxies,
                             std::size_t max_per_proxy, std::size_t buffer_limit)
    : strand_(std::move(strand)),
      turns_(strand_, proxies.size()),
      connections_(strand_, proxies, max_per_proxy, buffer_limit) {}

void ClientFanouts::release(std::size_t proxy, std::unique_ptr<UpstreamConnection> conn) {
    // Kept after the client has gone too while its fan-outs still to come at this proxy (SPE's backlog, legs
    // waiting for their turn) need it, as the client's requests came on one connection; the last of them (only
    // this leg's turn left) closes it, as the client closed its own.
    const bool needed = !client_gone_ || turns_.ahead(proxy, backlog_.issued()) > 1;
    connections_.release(proxy, std::move(conn), needed && !aborted_);
}

void ClientFanouts::client_closed() {
    asio::post(strand_, [self = shared_from_this()] {
        self->client_gone_ = true;
        // A proxy done with every fan-out of the client sees its connection close now; one that still has
        // legs to come keeps it for them (release closes it after the last).
        const auto issued = self->backlog_.issued();
        for (std::size_t proxy = 0; proxy < self->connections_.proxies(); ++proxy)
            if (self->turns_.ahead(proxy, issued) == 0) self->connections_.close_idle(proxy);
    });
}

void ClientFanouts::abort() {
    asio::post(strand_, [self = shared_from_this()] {
        self->aborted_ = true;
        self->turns_.abort();
        self->connections_.abort();
    });
}

}  // namespace spe
