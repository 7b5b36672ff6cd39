// The order one client caused across its connections. A browser keeps six
// connections per host and a test client sends request 2 of a sequence on
// another connection after reading reply 1: each proxy must see request 2 after
// it answered request 1, or it sees the GET before the DELETE whose reply the
// client had already read. So a request that reached the Multiplier after the
// client was given the whole reply to an earlier one goes to each proxy only
// once that proxy is done with the earlier one (its leg ended, or it got none);
// requests the client had in flight together may go in any order. Within one
// connection ProxyTurns already keeps the client's order, which is stricter.
//
// The order is kept only briefly (--order-wait): a leg whose wait reaches its
// deadline sets the earlier requests it waited for aside at that proxy and
// goes; later legs no longer wait for them either, and each leg sent while
// one of them is still out records that it overtook it (overtaken()).
//
// One ClientOrder per client address, shared by its connections
// (ServerContext::client_order); their fan-outs may run on different threads,
// so it is guarded by a mutex and wakes a waiting leg on its own executor.
#pragma once

#include "context/order_ticket.hpp"
#include "core/net.hpp"
#include "core/steady_clock.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace spe {

class ClientOrder {
public:
    /// One request's place in its client's order.
    class Place;
    using PlacePtr = std::shared_ptr<Place>;

    explicit ClientOrder(std::size_t proxies);

    /// A request of this client arrived (`ticket.id`: its record id). It will wait, at each proxy, for the
    /// client's earlier requests whose reply the client already had whole and that proxy is not done with.
    PlacePtr arrive(const OrderTicket& ticket);
    /// The client has the whole reply to `place`'s request: its later requests come after it.
    void delivered(const PlacePtr& place);
    /// `proxy` is done with `place`'s request (its leg ended, or none is sent). Idempotent.
    void done(const PlacePtr& place, std::size_t proxy);
    /// The request is over (its fan-out is gone): every proxy is done with it, and it is forgotten once
    /// those before it are too. Every place must be retired, delivered or not.
    void retire(const PlacePtr& place);

    /// `gave_up`: the deadline came first, and the earlier requests still out at the proxy were set aside.
    enum class Wait { ready, gave_up };
    struct Waited {
        Wait how = Wait::ready;
        std::vector<std::uint64_t> ids;  // the earlier requests it had to wait for (none: it went at once)
    };
    /// Waits until `proxy` is done with (or has set aside) every request `place` comes after, until
    /// `deadline` at most.
    awaitable<Waited> await_earlier(PlacePtr place, std::size_t proxy, Clock::time_point deadline,
                                    asio::any_io_executor executor);
    /// The earlier requests `place` comes after that were set aside at `proxy` and are still out there:
    /// those its leg, sent now, overtakes.
    std::vector<OrderTicket> overtaken(const PlacePtr& place, std::size_t proxy) const;

    /// Requests still tracked (not retired, or retired after one that is not): for tests.
    std::size_t tracked() const;

private:
    struct Waker;
    /// The earlier requests `place` must wait for at `proxy`, those it still must (under the lock).
    /// A request set aside there is no longer waited for.
    std::vector<PlacePtr> pending_before(const Place& place, std::size_t proxy) const;
    void forget_finished();  // under the lock

    const std::size_t proxies_;
    mutable std::mutex mutex_;
    std::deque<PlacePtr> live_;  // arrival order; a place leaves once retired, with those before it
};

class ClientOrder::Place {
public:
    std::uint64_t id() const { return ticket_.id; }

private:
    friend class ClientOrder;
    /// Where a proxy is with this request: still to answer it, done with it, or still answering it after a
    /// later leg stopped waiting for it.
    enum class AtProxy : std::uint8_t { pending, done, set_aside };
    Place(const OrderTicket& ticket, std::size_t proxies)
        : ticket_(ticket), at_(proxies, AtProxy::pending), waiters_(proxies) {}
    /// Wakes the legs waiting for this request at `proxy` (under the lock; posts to their executors).
    void wake(std::size_t proxy);
    OrderTicket ticket_;
    bool delivered_ = false;
    bool retired_ = false;
    std::vector<AtProxy> at_;                                 // per proxy
    std::vector<PlacePtr> after_;                             // delivered before this one arrived
    std::vector<std::vector<std::weak_ptr<Waker>>> waiters_;  // per proxy: legs waiting for this one
};

/// The ClientOrder of each client with a connection open: its connections' sessions hold it, and it goes
/// with the last of them. Any thread.
class ClientOrders {
public:
    explicit ClientOrders(std::size_t proxies) : proxies_(proxies) {}
    /// The order of the client `key` names (its address, and its X-SPE-Client value if any).
    std::shared_ptr<ClientOrder> of(const std::string& key);

private:
    const std::size_t proxies_;
    std::mutex mutex_;
    std::map<std::string, std::weak_ptr<ClientOrder>> orders_;
};

}  // namespace spe
