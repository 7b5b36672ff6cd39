// spe-multiplier: flags/config -> io_context -> listener; signals; graceful stop.
#include "context/memory_trim.hpp"
#include "context/server_context.hpp"
#include "core/config.hpp"
#include "core/cpu_placement.hpp"
#include "core/flag_table.hpp"
#include "judge/cache_rule_catalogue.hpp"
#include "log/result_log.hpp"
#include "log/run_dir_lock.hpp"
#include "metrics/metrics_server.hpp"
#include "metrics/run_metrics.hpp"
#include "replay/replay_server.hpp"
#include "session/listener.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <thread>

namespace {
using namespace spe;

std::vector<tcp::endpoint> resolve(asio::io_context& ioc, const Endpoint& e, const std::string& what) {
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(e.host, std::to_string(e.port), ec);
    if (ec || results.empty())
        throw std::runtime_error("cannot resolve " + what + " '" + e.to_string() + "': " + ec.message());
    return {results.begin(), results.end()};
}

void raise_fd_limit(std::size_t proxies) {
    // Each client connection may hold one connection per proxy and more: use
    // the whole hard limit rather than fail under load at the soft 1024.
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
    const auto soft = lim.rlim_cur;
    if (lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0) lim.rlim_cur = soft;
    }
    // A kept-alive client holds its own socket, the Collector's and one per proxy.
    const auto per_client = 2 + proxies;
    spdlog::info(
        "open-file limit {} (soft limit was {}, hard limit {}): room for about {} kept-alive clients "
        "({} descriptors each); beyond that, connections fail with 'Too many open files'",
        lim.rlim_cur, soft, lim.rlim_max, lim.rlim_cur / per_client, per_client);
}

/// After SIGINT/SIGTERM: wait for in-flight work (bounded by --drain-timeout),
/// then abort what is left (it is still logged) and stop the io_context.
awaitable<void> drain(asio::io_context& ioc, std::shared_ptr<ServerContext> ctx) {
    asio::steady_timer tick(ioc);
    const auto drain_deadline = Clock::now() + ctx->config().drain_timeout;
    std::optional<Clock::time_point> abort_deadline;
    error_code ec;
    while (ctx->stop().unfinished_work() > 0) {
        if (!abort_deadline && Clock::now() >= drain_deadline) {
            spdlog::warn("drain time over: aborting {} unfinished request(s)/connection(s)",
                         ctx->stop().unfinished_work());
            ctx->stop().abort_all();
            abort_deadline = Clock::now() + std::chrono::seconds(2);
        }
        if (abort_deadline && Clock::now() >= *abort_deadline) break;
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(with_ec(ec));
    }
    ioc.stop();
}

/// The fan-out's threads: they run `ioc` until this object goes, which stops
/// it (whatever ends serve(): the drain, or an exception) and joins them.
class FanoutThreads {
public:
    FanoutThreads(asio::io_context& ioc, unsigned count) : ioc_(ioc), work_(asio::make_work_guard(ioc)) {
        for (unsigned i = 0; i < count; ++i)
            threads_.emplace_back([&ioc] { ioc.run(); });
    }
    ~FanoutThreads() {
        work_.reset();
        ioc_.stop();  // unfinished fan-outs go with the io_context; their destructors log them
    }
    FanoutThreads(const FanoutThreads&) = delete;
    FanoutThreads& operator=(const FanoutThreads&) = delete;

private:
    asio::io_context& ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::vector<std::jthread> threads_;  // joined after the destructor's body has stopped the io_context
};

/// The replay port (--unsafe-requests replay): the Collector's parent for the proxies' unsafe copies.
std::shared_ptr<ReplayServer> start_replay_port(asio::io_context& ioc, ServerContext& ctx) {
    const auto& config = ctx.config();
    if (!ctx.replay_store()) {
        if (config.unsafe_requests == UnsafeRequests::withhold && !config.dummy && !config.proxies.empty())
            spdlog::warn(
                "no --replay-listen: unsafe requests (POST, PUT, PATCH, DELETE...) go to the Collector only; the "
                "proxies under test do not get them (each leg recorded NOT_SENT), since each copy would reach the "
                "origin");
        else if (config.unsafe_requests == UnsafeRequests::send && !config.proxies.empty())
            spdlog::warn(
                "--unsafe-requests send: every proxy's copy of an unsafe request may reach the origin (only for a "
                "synthetic origin)");
        return nullptr;
    }
    const auto& at = *config.replay_listen;
    ReplayLimits limits{config.max_header_bytes, config.max_request_body, config.client_timeout};
    std::shared_ptr<ReplayServer> server;
    try {
        const auto endpoints = resolve(ioc, at, "replay port");
        server = std::make_shared<ReplayServer>(ioc, endpoints.front(), ctx.replay_store(), limits);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("cannot listen on --replay-listen " + at.to_string() + ": " + e.code().message());
    }
    server->start();
    spdlog::info("replay port on {}: the proxies' copies of unsafe requests are answered from the client's reply",
                 at.to_string());
    return server;
}

/// The metrics listener (--metrics-listen), on a thread of its own; nullptr without it. A scrape reads the
/// counters the writer thread keeps (`metrics`) and, at that moment, the process's gauges.
std::unique_ptr<MetricsServer> start_metrics_listener(asio::io_context& ioc, const std::shared_ptr<ServerContext>& ctx,
                                                      const ResultLog& log, const RunMetrics* metrics) {
    const auto& config = ctx->config();
    if (!config.metrics_listen || !metrics) return nullptr;
    const auto& at = *config.metrics_listen;
    auto page = [ctx, &log, metrics] {
        return metrics->render({ctx->load().client_connections(), ctx->load().requests_in_flight(),
                                log.records_written(), log.records_dropped(), log.records_failed(),
                                resident_memory_bytes()});
    };
    try {
        const auto endpoints = resolve(ioc, at, "metrics listener");
        auto server = std::make_unique<MetricsServer>(endpoints.front(), config.metrics_allow, page);
        spdlog::info("metrics on http://{}/metrics (Prometheus text format)", at.to_string());
        return server;
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("cannot listen on --metrics-listen " + at.to_string() + ": " + e.code().message());
    }
}

/// Where the fan-out runs, and on how many CPUs it could (what --fanout-threads auto went by).
std::string fanout_placement(unsigned fanout_threads) {
    const auto cpus = usable_cpus();
    const auto where = fanout_threads == 0
                           ? std::string("on the clients' threads")
                           : fmt::format("on {} thread{} of its own", fanout_threads, fanout_threads == 1 ? "" : "s");
    return fmt::format("fan-out {}, {} usable CPU{}", where, cpus, cpus == 1 ? "" : "s");
}

/// Runs the server until the drain has ended. Returns when every session,
/// fan-out and pending coroutine is gone (the io_context with them), so every
/// record has been handed to `log`.
void serve(const Config& config, ResultLog& log, const RunMetrics* metrics) {
    // The proxies' legs run on an io_context of their own, on threads of their
    // own: a client's reply never waits in line behind fan-out work (docs/architecture.md).
    // Declared first, destroyed last: the client side's sessions hold sockets on it.
    asio::io_context fanout_ioc(static_cast<int>(std::max(config.fanout_threads, 1u)));
    // With one I/O thread nothing else touches the io_context (the resolves
    // below are synchronous, spdlog's flusher never posts to it), so Asio may
    // skip its scheduler and reactor locks: about 2 % of the instructions per request.
    asio::io_context ioc(config.threads == 1 ? BOOST_ASIO_CONCURRENCY_HINT_UNSAFE : static_cast<int>(config.threads));
    std::vector<ResolvedProxy> proxies;
    for (const auto& p : config.proxies)
        proxies.push_back({p.name, resolve(ioc, p.endpoint, "proxy " + p.name)});
    auto collector = resolve(ioc, *config.collector, config.dummy ? "parent" : "collector");
    auto ctx = std::make_shared<ServerContext>(config, std::move(collector), std::move(proxies), log, fanout_ioc);

    std::shared_ptr<Listener> listener;
    try {
        listener = std::make_shared<Listener>(ioc, ctx);
    } catch (const boost::system::system_error& e) {
        throw std::runtime_error("cannot listen on " + config.listen.to_string() + ": " + e.code().message());
    }
    listener->start();
    auto replay = start_replay_port(ioc, *ctx);
    auto metrics_listener = start_metrics_listener(ioc, ctx, log, metrics);
    asio::co_spawn(ioc, trim_memory_after_bursts(ctx, fanout_ioc), asio::detached);
    spdlog::flush_every(std::chrono::seconds(1));
    spdlog::info("spe-multiplier listening on {} ({} mode, collector {}, {} prox{}, {}, {})", config.listen.to_string(),
                 config.dummy                            ? "dummy"
                 : config.mode == FanoutMode::sequential ? "sequential"
                                                         : "concurrent",
                 config.collector->to_string(), config.proxies.size(), config.proxies.size() == 1 ? "y" : "ies",
                 heap_allocator(), fanout_placement(config.fanout_threads));

    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    std::function<void(const error_code&, int)> on_signal = [&](const error_code& ec, int sig) {
        if (ec) return;
        if (ctx->stop().stopping()) {
            spdlog::warn("second signal {}: aborting everything now", sig);
            ctx->stop().abort_all();
            return;
        }
        spdlog::info("signal {}: no new connections; finishing in-flight requests", sig);
        ctx->stop().set_stopping();
        listener->stop();
        if (replay) replay->stop();
        asio::co_spawn(ioc, drain(ioc, ctx), asio::detached);
        signals.async_wait(on_signal);
    };
    signals.async_wait(on_signal);

    FanoutThreads fanout_threads(fanout_ioc, config.fanout_threads);
    std::vector<std::jthread> workers;
    for (unsigned i = 1; i < config.threads; ++i)
        workers.emplace_back([&ioc] { ioc.run(); });
    ioc.run();
    for (auto& w : workers)
        w.join();
}

int run(const Config& config) {
    // One Multiplier per run directory, held until the process ends; taken before the logs are opened, so
    // that a Multiplier refused there leaves nothing in the other one's directory.
    const auto run_dirs = lock_run_dirs({config.log_path, config.rope_log_path});
    // The counters outlive the log, whose writer thread updates them.
    std::unique_ptr<RunMetrics> metrics;
    if (config.metrics_listen) {
        std::vector<std::string> names;
        for (const auto& p : config.proxies)
            names.push_back(p.name);
        metrics = std::make_unique<RunMetrics>(std::move(names));
    }
    ResultLog log(config, metrics.get());
    if (config.capture_secrets && !config.capture_dir.empty())
        spdlog::warn(
            "--capture-secrets: the captures in {} hold users' cookies and credentials (Cookie, Set-Cookie, "
            "Authorization, Proxy-Authorization values as received)",
            config.capture_dir);
    serve(config, log, metrics.get());
    log.close();  // the records still queued go to disk
    const auto dropped = log.records_dropped();
    const auto failed = log.records_failed();
    if (dropped || failed)
        spdlog::warn(
            "stopped; {} record(s) written, {} dropped (the disk fell more than --log-queue-bytes behind), {} not "
            "written (disk error)",
            log.records_written(), dropped, failed);
    else
        spdlog::info("stopped; {} record(s) written, 0 dropped", log.records_written());
    return 0;
}

/// What an action other than running prints (--check: nothing, the options were valid).
int print(Action action) {
    switch (action) {
        case Action::help:
            std::cout << help_text();
            break;
        case Action::version:
            std::cout << "spe-multiplier 0.1.0\n";
            break;
        case Action::list_flags:
            std::cout << flag_table_json() << "\n";
            break;
        case Action::list_cache_rules:
            std::cout << cache_rule_catalogue_json() << "\n";
            break;
        case Action::check:
        case Action::run:
            break;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    auto stderr_logger = spdlog::stderr_color_mt("spe");
    spdlog::set_default_logger(stderr_logger);
    try {
        const auto command = spe::parse_command_line(argc, argv);
        if (command.action != Action::run) return print(command.action);
        spdlog::set_level(spdlog::level::from_str(command.config.log_level));
        raise_fd_limit(command.config.proxies.size());
        return run(command.config);
    } catch (const spe::ConfigError& e) {
        std::cerr << "spe-multiplier: " << e.what() << "\n(see spe-multiplier --help)\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "spe-multiplier: " << e.what() << "\n";
        return 1;
    }
}
