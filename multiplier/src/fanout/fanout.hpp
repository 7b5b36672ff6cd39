// After (or, in concurrent mode, beside) the Collector leg: sends one client
// request to every proxy under test in a rotating order, gathers the measures,
// validates them against the reference and hands one record to the log.
// Lives on the fan-out executor of its client connection (the connection's
// ClientFanouts executor, on the fan-out threads), not on the client's: the
// session's calls are posted there in call order. Owns the record until it
// is logged. Each fan-out has its number in the client's order, and each of
// its legs waits for its proxy's turn (ProxyTurnQueue::await_turn): a proxy gets a
// connection's requests one at a time, in the order the client sent them, for
// as long as --order-wait allows; a leg that waited that long goes on another
// connection and records what it overtook. A fan-out that sends a proxy nothing
// still passes its turn on, at the latest in its destructor.
#pragma once

#include "context/server_context.hpp"
#include "core/measurement.hpp"
#include "core/net.hpp"
#include "fanout/client_fanouts.hpp"
#include "http/expected_body_digest.hpp"
#include "http/wire_request.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace spe {

class CacheJudge;

/// The longest a client is held while SPE's measuring catches up (--max-fanout-backlog): --turn-timeout, by
/// default one fan-out's legs' deadline (--timeout) and a second of scheduling, once per proxy with --legs
/// serial (its legs run one after another).
Clock::duration client_hold_bound(const Config& config, std::size_t proxies);

/// The Collector leg's outcome: what the proxies' replies are compared with.
struct Reference {
    Measure collector;           // the Collector's reply as the client got it
    unsigned client_status = 0;  // the status the client got
    /// The Multiplier's own reply, when it answered by itself (the Collector
    /// failed): the proxies are compared with it instead.
    std::optional<Measure> own_reply;
    /// Why the Collector's reply is not a whole reference (it failed or broke
    /// off, or the client went away); empty when it is one.
    std::string shortfall;
    /// The Collector's body, when kept (RelayOutcome::body): the legs compare theirs with it.
    std::shared_ptr<const ReferenceBody> body;
};

class Fanout : public std::enable_shared_from_this<Fanout> {
public:
    /// `order`: the client's order across its connections (nullptr: only this connection's).
    Fanout(std::shared_ptr<ServerContext> ctx, std::shared_ptr<ClientFanouts> fanouts,
           std::shared_ptr<ClientOrder> order, RequestRecord record, std::shared_ptr<const WireRequest> request,
           bool head_request);
    /// Logs the record if nothing else did: no client request goes unrecorded.
    ~Fanout();
    Fanout(const Fanout&) = delete;
    Fanout& operator=(const Fanout&) = delete;

    // Called from the client's session; each is carried out on the fan-out
    // executor, after the calls made before it. The fan-out mode
    // (--mode sequential or concurrent) is decided here, nowhere else.

    /// Before the Collector leg: in concurrent mode the request goes to every proxy now.
    void begin();
    /// Whether the legs would compare their bodies with the Collector's (Reference::body): they
    /// start once it is whole, and there are legs to send.
    bool compares_bodies() const;
    /// After the Collector leg, with its outcome. Sequential mode: the request
    /// goes to every proxy now (a reply of the reference's status cut past its length),
    /// or, when the reference falls short, not at all: the record says why.
    /// Concurrent mode: a shortfall is the record's note, unless the
    /// Multiplier's own reply stands in as the reference.
    void set_reference(Reference reference);
    /// The client has the whole reply: its later requests, on any connection, come after this one.
    void delivered();

private:
    /// Runs `step` on the fan-out executor, keeping this fan-out alive until then.
    template <class Step>
    void on_fanout_executor(Step step);
    bool sequential() const;
    /// The legs start once the reference is whole: sequential mode, and an unsafe request whose copies
    /// the replay port answers from the client's reply (it must be kept before they arrive).
    bool legs_wait_for_reference() const;
    /// An unsafe request the proxies do not get (--unsafe-requests withhold): each leg is recorded as such.
    bool withheld() const;
    void record_withheld();
    /// `body_cap`: a proxy's body read ends past this many bytes; when `capped_status` is set, only a
    /// reply of that status (the reference's) is cut there, any other read to --max-proxy-body.
    /// `due`: when the legs were handed over.
    void start_legs(std::uint64_t body_cap, std::optional<unsigned> capped_status, Clock::time_point due);
    void take_reference(Reference& reference);  // takes its parts
    /// Waits for the proxy's turn, sends, measures, passes the turn on. `due`: when the leg could
    /// have gone out but for SPE (its queued_us counts from there).
    awaitable<void> run_leg(std::size_t proxy, Clock::time_point due);
    awaitable<void> send_in_turn(std::size_t proxy, Clock::time_point due);
    /// Waits for this connection's turn at the proxy, then for the client's earlier requests on its other
    /// connections (ClientOrder), both until `deadline` (--order-wait); false: the Multiplier is stopping.
    awaitable<bool> await_order(std::size_t proxy, Clock::time_point deadline);
    /// A connection to `proxy` for the leg, waiting --order-wait at most when all this client connection's are
    /// out there; nullptr: none (the record says why).
    awaitable<std::unique_ptr<UpstreamConnection>> await_connection(std::size_t proxy);
    /// What the leg, sent now, overtakes at `proxy`: the record's `overtook`, and whether any of them may
    /// have changed what the proxy's cache gives this request (OrderTicket::affects).
    void note_overtaken(std::size_t proxy);
    /// --legs serial: each leg once the previous one has ended.
    awaitable<void> run_legs_in_turn(std::vector<std::size_t> order, Clock::time_point due);
    /// Runs one leg (`proxy`) or all of them (nullopt); an exception is logged.
    void spawn(awaitable<void> work, std::optional<std::size_t> proxy);
    /// Tells the cache-rule judge of a proxy's successful unsafe request as soon as its reply arrives.
    void note_leg(CacheJudge& judge, int proxy, const Measure& m);
    void maybe_finish();
    void finish();
    /// What the proxies' replies are compared with: the reply as the client got it.
    const Measure& compared_reference() const;

    std::shared_ptr<ServerContext> ctx_;
    std::shared_ptr<ClientFanouts> fanouts_;
    RequestRecord record_;
    std::shared_ptr<const WireRequest> request_;
    const OrderTicket ticket_;            // this request as a later leg that overtakes it sees it
    std::shared_ptr<ClientOrder> order_;  // nullptr: --order connection
    ClientOrder::PlacePtr place_;         // this request's place in it
    std::uint64_t sequence_;              // this fan-out's number among its client connection's, in the client's order
    bool head_request_;
    WorkGuard work_;
    RequestCount request_count_;
    std::optional<Measure> own_reply_;
    std::shared_ptr<const ReferenceBody> reference_body_;
    std::uint64_t body_cap_ = 0;
    std::optional<unsigned> capped_status_;
    std::size_t pending_ = 0;
    bool started_ = false;
    bool has_reference_ = false;
    bool logged_ = false;
};

}  // namespace spe
