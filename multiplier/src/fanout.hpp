// After (or, in concurrent mode, beside) the Collector leg: sends one client
// request to every proxy under test in a rotating order, gathers the measures,
// validates them against the reference and hands one record to the log.
// Lives on the fan-out executor of its client connection (the connection's
// ProxyPools executor, on the fan-out threads), not on the client's: the
// session's calls are posted there in call order. Owns the record until it
// is logged.
#pragma once

#include "measurement.hpp"
#include "net.hpp"
#include "proxy_pools.hpp"
#include "server_context.hpp"
#include "wire_request.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace spe {

class Fanout : public std::enable_shared_from_this<Fanout> {
public:
    Fanout(std::shared_ptr<ServerContext> ctx, std::shared_ptr<ProxyPools> pools, RequestRecord record,
           std::shared_ptr<const WireRequest> request, bool head_request);
    /// Logs the record if nothing else did: no client request goes unrecorded.
    ~Fanout();
    Fanout(const Fanout&) = delete;
    Fanout& operator=(const Fanout&) = delete;

    // Called from the client's session; each is carried out on the fan-out
    // executor, after the calls made before it.

    /// Sends the request to every proxy.
    void start();
    /// The Collector's reply, the status the client got, and, when the
    /// Multiplier answered by itself (the Collector failed), that reply: it is
    /// then the reference the proxies are compared with.
    void set_reference(Measure collector, unsigned client_status, std::optional<Measure> own_reply = std::nullopt);
    /// No fan-out for this request; the record is logged with the reason.
    void skip(std::string why);
    /// A remark for the record (e.g. why a concurrent fan-out's reference is incomplete).
    void note(std::string why);

private:
    /// Runs `step` on the fan-out executor, keeping this fan-out alive until then.
    template <class Step>
    void on_fanout_executor(Step step);
    void start_legs();
    awaitable<void> run_leg(std::size_t proxy);
    /// --legs serial: each leg once the previous one has ended.
    awaitable<void> run_legs_in_turn(std::vector<std::size_t> order);
    /// Runs one leg (`proxy`) or all of them (nullopt); an exception is logged.
    void spawn(awaitable<void> work, std::optional<std::size_t> proxy);
    void maybe_finish();
    void finish();

    std::shared_ptr<ServerContext> ctx_;
    std::shared_ptr<ProxyPools> pools_;
    RequestRecord record_;
    std::shared_ptr<const WireRequest> request_;
    bool head_request_;
    WorkGuard work_;
    RequestCount in_flight_;
    std::optional<Measure> own_reply_;
    std::size_t pending_ = 0;
    bool started_ = false;
    bool has_reference_ = false;
    bool logged_ = false;
};

}  // namespace spe
