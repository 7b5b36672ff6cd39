#include "fanout/fanout.hpp"
#include "core/coroutine_exception.hpp"

#include "fanout/proxy_leg.hpp"
#include "judge/cache_judge.hpp"
#include "judge/fetch_memory.hpp"
#include "judge/validator.hpp"
#include "log/result_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>

namespace spe {

Clock::duration client_hold_bound(const Config& config, std::size_t proxies) {
    if (config.turn_timeout) return *config.turn_timeout;
    const Clock::duration leg = config.timeout + std::chrono::seconds(1);
    return config.legs == LegOrder::serial ? leg * static_cast<Clock::rep>(std::max<std::size_t>(proxies, 1)) : leg;
}

Fanout::Fanout(std::shared_ptr<ServerContext> ctx, std::shared_ptr<ClientFanouts> fanouts,
               std::shared_ptr<ClientOrder> order, RequestRecord record, std::shared_ptr<const WireRequest> request,
               bool head_request)
    : ctx_(std::move(ctx)),
      fanouts_(std::move(fanouts)),
      record_(std::move(record)),
      request_(std::move(request)),
      ticket_{record_.id, url_key(record_.url), is_unsafe_method(record_.method)},
      order_(std::move(order)),
      place_(order_ ? order_->arrive(ticket_) : nullptr),
      sequence_(fanouts_->backlog().next_sequence()),
      head_request_(head_request),
      work_(ctx_->stop()),
      request_count_(ctx_->load()) {
    record_.proxies.resize(ctx_->proxies().size());
    for (std::size_t i = 0; i < record_.proxies.size(); ++i)
        record_.proxies[i].name = ctx_->proxies()[i].name;
    // Posted before any of this fan-out's calls: its ticket is there before a leg of it can be set aside.
    asio::post(fanouts_->executor(), [fanouts = fanouts_, sequence = sequence_, ticket = ticket_] {
        fanouts->turns().enter(sequence, ticket);
    });
}

Fanout::~Fanout() {
    // No leg holds this fan-out any more: whatever it did not pass on, the proxies' turns move past it.
    asio::post(fanouts_->executor(), [fanouts = fanouts_, sequence = sequence_] { fanouts->turns().leave(sequence); });
    if (order_) order_->retire(place_);
    if (!has_reference_) fanouts_->backlog().reference_taken();  // never reached (the session failed): no backlog left
    if (logged_) return;
    if (record_.note.empty()) record_.note = "fan-out interrupted";
    for (auto& p : record_.proxies)
        if (!p.measure.status && p.measure.error == LegError::none) p.measure.error = LegError::aborted;
    finish();
}

template <class Step>
void Fanout::on_fanout_executor(Step step) {
    asio::post(fanouts_->executor(), [self = shared_from_this(), step = std::move(step)]() mutable { step(*self); });
}

bool Fanout::sequential() const {
    return ctx_->config().mode == FanoutMode::sequential;
}

bool Fanout::legs_wait_for_reference() const {
    return sequential() || (ticket_.unsafe && ctx_->config().unsafe_requests == UnsafeRequests::replay);
}

bool Fanout::withheld() const {
    return ticket_.unsafe && ctx_->config().unsafe_requests == UnsafeRequests::withhold;
}

bool Fanout::compares_bodies() const {
    // Called on the client's thread: only what never changes (not the record, the fan-out executor's).
    return legs_wait_for_reference() && !withheld() && !ctx_->proxies().empty();
}

void Fanout::begin() {
    if (legs_wait_for_reference()) return;
    on_fanout_executor(
        [due = Clock::now()](Fanout& f) { f.start_legs(f.ctx_->config().max_proxy_body, std::nullopt, due); });
}

void Fanout::set_reference(Reference reference) {
    // Sequential: the proxies' turn comes once the reference is whole. Their
    // reads then stop past its length: more bytes can only confirm a
    // mismatch, so an endless body costs one byte more. Only a reply of the
    // reference's status, though: the length says nothing of another's (a 200
    // where the Collector sent a 304), which is read whole, timed and hashed.
    const bool legs_now = legs_wait_for_reference() && reference.shortfall.empty();
    // On the heap: the hand-over moves the handler several times, and a Reference holds two Measures.
    auto held = std::make_unique<Reference>(std::move(reference));
    on_fanout_executor([reference = std::move(held), legs_now, due = Clock::now()](Fanout& f) mutable {
        f.take_reference(*reference);
        if (legs_now) f.start_legs(f.record_.collector.bytes, f.record_.collector.status, due);
    });
}

void Fanout::delivered() {
    if (order_) order_->delivered(place_);
}

void Fanout::take_reference(Reference& reference) {
    record_.collector = std::move(reference.collector);
    record_.client_status = reference.client_status;
    own_reply_ = std::move(reference.own_reply);
    reference_body_ = std::move(reference.body);
    has_reference_ = true;
    fanouts_->backlog().reference_taken();
    // As soon as the client's reply is whole: a proxy may serve this fetch to a later request that ends first.
    if (reference.shortfall.empty()) ctx_->fetch_memory().remember(record_.method, compared_reference());
    // The Collector invalidated when its reply left, not when this executor got to it: the client's next
    // request may have reached the Collector (and stored a new copy) before then.
    if (auto* judge = ctx_->cache_judge(); judge && ticket_.unsafe) judge->note_collector_unsafe(record_);
    if (!reference.shortfall.empty()) {
        if (legs_wait_for_reference()) {  // no fan-out: the record is logged with the reason
            record_.proxies.clear();
            started_ = true;
            fanouts_->turns().pass_all(sequence_);
        }
        if (legs_wait_for_reference() || !own_reply_) record_.note = std::move(reference.shortfall);
    }
    maybe_finish();
}

void Fanout::start_legs(std::uint64_t body_cap, std::optional<unsigned> capped_status, Clock::time_point due) {
    started_ = true;
    if (withheld()) {
        record_withheld();
        return;
    }
    body_cap_ = body_cap;
    capped_status_ = capped_status;
    const auto n = record_.proxies.size();
    pending_ = n;
    const auto first = n ? ctx_->next_rotation() % n : 0;
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < n; ++k) {
        const auto proxy = (first + k) % n;
        record_.proxies[proxy].position = k;
        order.push_back(proxy);
    }
    if (ctx_->config().legs == LegOrder::serial && n > 0)
        spawn(run_legs_in_turn(std::move(order), due), std::nullopt);
    else
        for (auto proxy : order)
            spawn(run_leg(proxy, due), proxy);
    maybe_finish();
}

void Fanout::record_withheld() {
    for (auto& p : record_.proxies) {
        p.measure.error = LegError::not_sent;
        p.measure.error_detail =
            "unsafe method: not sent to the proxies, since without a replay port (--replay-listen) each copy "
            "would reach the origin";
    }
    fanouts_->turns().pass_all(sequence_);
    maybe_finish();
}

void Fanout::spawn(awaitable<void> work, std::optional<std::size_t> proxy) {
    asio::co_spawn(
        fanouts_->executor(), std::move(work), report_exception([self = shared_from_this(), proxy](const char* what) {
            spdlog::error("{} of request {} failed: {}",
                          proxy ? "proxy leg " + self->record_.proxies[*proxy].name : std::string("the proxy legs"),
                          self->record_.id, what);
        }));
}

awaitable<void> Fanout::run_legs_in_turn(std::vector<std::size_t> order, Clock::time_point due) {
    auto self = shared_from_this();
    for (auto proxy : order) {
        co_await run_leg(proxy, due);
        due = Clock::now();  // the next leg's wait for its turn starts as this one ends
    }
}

awaitable<void> Fanout::run_leg(std::size_t proxy, Clock::time_point due) {
    auto self = shared_from_this();
    // However this leg ends (an exception included), the proxy's turn passes to the next fan-out.
    struct PassTurn {
        Fanout& fanout;
        std::size_t proxy;
        ~PassTurn() {
            fanout.fanouts_->turns().pass(proxy, fanout.sequence_);
            if (fanout.order_) fanout.order_->done(fanout.place_, proxy);
        }
    };
    {
        PassTurn pass{*this, proxy};
        co_await send_in_turn(proxy, due);
    }
    --pending_;
    maybe_finish();
}

awaitable<void> Fanout::send_in_turn(std::size_t proxy, Clock::time_point due) {
    auto& result = record_.proxies[proxy];
    // A bound on memory: each leg waits --order-wait at most, so only a client that sends faster than
    // --max-queued-legs per --order-wait on one connection (a pipelined burst) reaches it; the rest is busy.
    if (const auto ahead = fanouts_->turns().ahead(proxy, sequence_); ahead > ctx_->config().max_queued_legs) {
        result.measure.error = LegError::busy;
        result.measure.error_detail = fmt::format(
            "not sent: this proxy had not answered the {} requests before it on this client connection "
            "(at most --max-queued-legs {} wait for it)",
            ahead, ctx_->config().max_queued_legs);
        co_return;
    }
    // One deadline for the order: however many requests the leg comes after, on however many connections, it
    // waits --order-wait at most, then overtakes what is still out (recorded: note_overtaken).
    // Two statements, not `ready ? co_await ... : nullptr`: GCC 12 destroys the awaited result of a co_await
    // inside a conditional expression too early (the leg then sent on a freed connection at shutdown).
    std::unique_ptr<UpstreamConnection> conn;
    if (co_await await_order(proxy, Clock::now() + ctx_->config().order_wait)) conn = co_await await_connection(proxy);
    result.queued_us = micros_since(due);
    if (!conn) co_return;
    note_overtaken(proxy);
    const auto& cfg = ctx_->config();
    auto* judge = ctx_->cache_judge();
    const ProxyLegLimits limits{cfg.timeout,          body_cap_,
                                cfg.max_header_bytes, cfg.capture_dir.empty() ? 0 : cfg.capture_body_bytes,
                                judge != nullptr,     reference_body_.get(),
                                capped_status_,       cfg.max_proxy_body};
    result.sent_at = unix_seconds();
    // Measured apart and moved in once it ended: a leg whose coroutine is destroyed before (the
    // Multiplier stopping) leaves the record's measure empty, which the record calls aborted.
    Measure measure;
    co_await run_proxy_leg(*conn, *request_, head_request_, limits, ctx_->policy(), measure);
    result.measure = std::move(measure);
    fanouts_->release(proxy, std::move(conn));
    if (judge) note_leg(*judge, static_cast<int>(proxy), result.measure);
}

awaitable<std::unique_ptr<UpstreamConnection>> Fanout::await_connection(std::size_t proxy) {
    // As long as the order's wait, when this client connection's connections are all out at the proxy: a leg
    // that has just stopped waiting for the order must not find the time for a connection already spent.
    auto conn = co_await fanouts_->acquire(proxy, Clock::now() + ctx_->config().order_wait);
    if (conn) co_return conn;
    auto& measure = record_.proxies[proxy].measure;
    if (fanouts_->aborted()) {
        measure.error = LegError::aborted;
        measure.error_detail = "the Multiplier stopped while the leg waited for a connection";
    } else {
        measure.error = LegError::busy;
        measure.error_detail = fmt::format(
            "not sent: the {} connections this client connection may hold to this proxy (--max-conns-per-proxy) "
            "were all still answering earlier requests for --order-wait",
            ctx_->config().max_conns_per_proxy);
    }
    co_return nullptr;
}

awaitable<bool> Fanout::await_order(std::size_t proxy, Clock::time_point deadline) {
    const auto turn = co_await fanouts_->turns().await_turn(proxy, sequence_, deadline);
    if (turn == ProxyTurnQueue::Wait::aborted) {
        auto& measure = record_.proxies[proxy].measure;
        measure.error = LegError::aborted;
        measure.error_detail = "the Multiplier stopped while the leg waited for its turn";
        co_return false;
    }
    if (!order_) co_return true;
    auto waited = co_await order_->await_earlier(place_, proxy, deadline, fanouts_->executor());
    record_.proxies[proxy].waited_for = std::move(waited.ids);
    co_return true;
}

void Fanout::note_overtaken(std::size_t proxy) {
    auto overtaken = fanouts_->turns().overtaken(proxy, sequence_);
    if (order_) {
        const auto others = order_->overtaken(place_, proxy);
        overtaken.insert(overtaken.end(), others.begin(), others.end());
    }
    auto& result = record_.proxies[proxy];
    for (const auto& earlier : overtaken) {
        result.overtook.push_back(earlier.id);
        result.overtook_related = result.overtook_related || earlier.affects(ticket_.url);
    }
    // A request of this connection can be set aside at both (its turn, and the client's order it was delivered in).
    std::sort(result.overtook.begin(), result.overtook.end());
    result.overtook.erase(std::unique(result.overtook.begin(), result.overtook.end()), result.overtook.end());
}

void Fanout::note_leg(CacheJudge& judge, int proxy, const Measure& m) {
    // Noted as the reply arrives, not when the record is whole: a later
    // request may meet this cache after the invalidation before then.
    if (ticket_.unsafe && m.status) judge.note_unsafe(proxy, record_.url, *m.status, unix_seconds());
}

void Fanout::maybe_finish() {
    if (started_ && has_reference_ && pending_ == 0 && !logged_) finish();
}

const Measure& Fanout::compared_reference() const {
    return own_reply_ ? *own_reply_ : record_.collector;
}

void Fanout::finish() {
    logged_ = true;
    const Measure& reference = compared_reference();
    for (auto& p : record_.proxies) {
        if (record_.method == "GET")
            validate(reference, p, ctx_->fetch_memory());
        else
            validate(reference, p);
    }
    if (auto* judge = ctx_->cache_judge()) judge->judge(record_, request_->header(), &ctx_->fetch_memory());
    ctx_->log().write(record_);
}

}  // namespace spe
