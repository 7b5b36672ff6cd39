#include "context/client_order.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>

namespace spe {

/// A leg waiting for earlier requests, woken on its own executor: the leg's executor runs one
/// handler at a time, so a wake posted while the leg is still deciding to wait runs once it waits.
struct ClientOrder::Waker {
    explicit Waker(const asio::any_io_executor& executor) : timer(executor) {}
    asio::steady_timer timer;
};

ClientOrder::ClientOrder(std::size_t proxies) : proxies_(proxies) {}

ClientOrder::PlacePtr ClientOrder::arrive(const OrderTicket& ticket) {
    PlacePtr place(new Place(ticket, proxies_));
    std::lock_guard lock(mutex_);
    for (const auto& earlier : live_)
        if (earlier->delivered_) place->after_.push_back(earlier);
    live_.push_back(place);
    return place;
}

void ClientOrder::delivered(const PlacePtr& place) {
    std::lock_guard lock(mutex_);
    place->delivered_ = true;
}

void ClientOrder::Place::wake(std::size_t proxy) {
    for (auto& w : waiters_[proxy])
        if (auto waker = w.lock()) asio::post(waker->timer.get_executor(), [waker] { waker->timer.cancel(); });
    waiters_[proxy].clear();
}

void ClientOrder::done(const PlacePtr& place, std::size_t proxy) {
    std::lock_guard lock(mutex_);
    if (proxy >= place->at_.size() || place->at_[proxy] == Place::AtProxy::done) return;
    place->at_[proxy] = Place::AtProxy::done;
    place->wake(proxy);  // none waits for one set aside: then there is nobody to wake
}

void ClientOrder::retire(const PlacePtr& place) {
    for (std::size_t proxy = 0; proxy < proxies_; ++proxy)
        done(place, proxy);
    std::lock_guard lock(mutex_);
    place->retired_ = true;
    forget_finished();
}

std::vector<ClientOrder::PlacePtr> ClientOrder::pending_before(const Place& place, std::size_t proxy) const {
    std::vector<PlacePtr> pending;
    for (const auto& earlier : place.after_)
        if (earlier->at_[proxy] == Place::AtProxy::pending) pending.push_back(earlier);
    return pending;
}

void ClientOrder::forget_finished() {
    // Only from the front: a place's `after_` holds what it waits for, so a retired one in the middle
    // costs nothing but its slot until those before it are (a client's requests end about in order).
    while (!live_.empty() && live_.front()->retired_) {
        live_.front()->after_.clear();
        live_.pop_front();
    }
}

awaitable<ClientOrder::Waited> ClientOrder::await_earlier(PlacePtr place, std::size_t proxy, Clock::time_point deadline,
                                                          asio::any_io_executor executor) {
    Waited out;
    std::shared_ptr<Waker> waker;
    for (;;) {
        std::vector<PlacePtr> pending;
        {
            std::lock_guard lock(mutex_);
            pending = pending_before(*place, proxy);
            if (!pending.empty() && !waker) {
                waker = std::make_shared<Waker>(executor);
                waker->timer.expires_at(deadline);  // one deadline for the whole wait
            }
            for (const auto& p : pending)
                p->waiters_[proxy].push_back(waker);
        }
        for (const auto& p : pending)
            if (std::find(out.ids.begin(), out.ids.end(), p->id()) == out.ids.end()) out.ids.push_back(p->id());
        if (pending.empty()) co_return out;
        error_code ec;
        co_await waker->timer.async_wait(with_ec(ec));
        if (!ec) break;  // the deadline, not a wake-up
    }
    // The deadline: what is still out at the proxy is set aside there, and the later legs waiting for it
    // are woken to go too (they record that they overtook it).
    std::lock_guard lock(mutex_);
    for (const auto& p : pending_before(*place, proxy)) {
        p->at_[proxy] = Place::AtProxy::set_aside;
        p->wake(proxy);
        out.how = Wait::gave_up;
    }
    co_return out;
}

std::vector<OrderTicket> ClientOrder::overtaken(const PlacePtr& place, std::size_t proxy) const {
    std::vector<OrderTicket> out;
    std::lock_guard lock(mutex_);
    for (const auto& earlier : place->after_)
        if (earlier->at_[proxy] == Place::AtProxy::set_aside) out.push_back(earlier->ticket_);
    return out;
}

std::size_t ClientOrder::tracked() const {
    std::lock_guard lock(mutex_);
    return live_.size();
}

std::shared_ptr<ClientOrder> ClientOrders::of(const std::string& key) {
    std::lock_guard lock(mutex_);
    // Clients come and go: the ones gone are dropped as the map doubles, so it stays as small as the live set.
    if (orders_.size() >= 64 && (orders_.size() & (orders_.size() - 1)) == 0)
        std::erase_if(orders_, [](const auto& entry) { return entry.second.expired(); });
    auto& slot = orders_[key];
    auto order = slot.lock();
    if (!order) {
        order = std::make_shared<ClientOrder>(proxies_);
        slot = order;
    }
    return order;
}

}  // namespace spe
