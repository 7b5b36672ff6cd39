#include "metrics/run_metrics.hpp"
#include "metrics/exposition.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace spe {
namespace {

constexpr std::string_view kCollectorLabel = "collector";

template <class T, std::size_t N>
std::size_t index_of(const std::array<T, N>& values, T value) {
    return static_cast<std::size_t>(std::find(values.begin(), values.end(), value) - values.begin());
}

/// A finding's rule in the catalogue's order (the judge names rules by the catalogue's own strings).
std::size_t rule_index(std::string_view rule) {
    for (std::size_t i = 0; i < kCacheRules.size(); ++i)
        if (kCacheRules[i].id == rule) return i;
    return kCacheRules.size();
}

void count_findings(const std::vector<std::string_view>& rules, LegSeries& s) {
    for (auto rule : rules)
        if (auto i = rule_index(rule); i < s.findings.size()) ++s.findings[i];
}

/// One family with a sample per leg, the value taken by `value` from the leg's series.
template <class Value>
void per_leg(Exposition& out, const std::vector<std::string>& names, const std::vector<LegSeries>& series,
             std::string_view name, std::string_view type, std::string_view help, Value value) {
    out.family(name, type, help);
    for (std::size_t i = 0; i < series.size(); ++i)
        out.sample(name, {{"proxy", names[i]}}, value(series[i]));
}

void write_results(Exposition& out, const std::vector<std::string>& names, const std::vector<LegSeries>& series) {
    out.family("spe_results_total", "counter",
               "Legs by result class (the record's `result`; the Collector's: OK, or the class of its error)");
    for (std::size_t i = 0; i < series.size(); ++i)
        for (std::size_t c = 0; c < kResultClasses.size(); ++c)
            out.sample("spe_results_total", {{"proxy", names[i]}, {"class", to_string(kResultClasses[c])}},
                       series[i].results[c]);
}

void write_findings(Exposition& out, const std::vector<std::string>& names, const std::vector<LegSeries>& series,
                    RuleSeverity severity, std::string_view name, std::string_view help) {
    out.family(name, "counter", help);
    for (std::size_t i = 0; i < series.size(); ++i)
        for (std::size_t r = 0; r < kCacheRules.size(); ++r)
            if (kCacheRules[r].severity == severity)
                out.sample(name, {{"proxy", names[i]}, {"rule", kCacheRules[r].id}}, series[i].findings[r]);
}

void write_errors(Exposition& out, const std::vector<std::string>& names, const std::vector<LegSeries>& series) {
    out.family("spe_leg_errors_total", "counter", "Legs that failed, by kind (the record's `error`)");
    for (std::size_t i = 0; i < series.size(); ++i)
        for (std::size_t e = 0; e < kLegErrors.size(); ++e)
            out.sample("spe_leg_errors_total", {{"proxy", names[i]}, {"kind", to_string(kLegErrors[e])}},
                       series[i].errors[e]);
}

void write_latency(Exposition& out, const std::vector<std::string>& names, const std::vector<LegSeries>& series,
                   std::string_view name, std::string_view help, LatencyHistogram LegSeries::*which) {
    out.family(name, "histogram", help);
    for (std::size_t i = 0; i < series.size(); ++i) {
        const auto& h = series[i].*which;
        out.histogram(name, {{"proxy", names[i]}}, kLatencyBounds, h.counts, h.sum);
    }
}

void write_holds(Exposition& out, const ClientHolds& holds) {
    out.family("spe_client_holds_total", "counter",
               "Client requests read only after the client was held back: SPE's measuring (the fan-out executor) "
               "more than --max-fanout-backlog of the connection's fan-outs behind (the records' client_held_us)");
    out.sample("spe_client_holds_total", {}, holds.count);
    out.family("spe_client_held_seconds_total", "counter", "Time the clients were held back, in all");
    out.sample("spe_client_held_seconds_total", {}, static_cast<double>(holds.held_us) / 1e6);
}

void write_process(Exposition& out, const ProcessGauges& p) {
    out.family("spe_client_connections", "gauge", "Client connections open");
    out.sample("spe_client_connections", {}, p.client_connections);
    out.family("spe_requests_in_flight", "gauge", "Client requests being answered or fanned out, not yet logged");
    out.sample("spe_requests_in_flight", {}, p.requests_in_flight);
    out.family("spe_records_written_total", "counter", "Records written to the logs");
    out.sample("spe_records_written_total", {}, p.records_written);
    out.family("spe_records_dropped_total", "counter",
               "Records dropped because the disk fell more than --log-queue-bytes behind");
    out.sample("spe_records_dropped_total", {}, p.records_dropped);
    out.family("spe_records_failed_total", "counter", "Records the disk refused in part or whole");
    out.sample("spe_records_failed_total", {}, p.records_failed);
    out.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes");
    out.sample("process_resident_memory_bytes", {}, p.resident_bytes);
}

}  // namespace

void LatencyHistogram::observe_us(std::int64_t us) {
    if (us < 0) return;
    const double seconds = static_cast<double>(us) / 1e6;
    const auto bucket =
        std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) - kLatencyBounds.begin();
    ++counts[static_cast<std::size_t>(bucket)];
    sum += seconds;
}

void LegSeries::add(const LegTally& leg) {
    ++requests;
    if (auto c = index_of(kResultClasses, leg.result); c < results.size()) ++results[c];
    if (auto e = index_of(kLegErrors, leg.error); e < errors.size()) ++errors[e];
    count_findings(leg.violations, *this);
    count_findings(leg.advisories, *this);
    header_bytes += leg.header_bytes;
    body_bytes += leg.body_bytes;
    connect.observe_us(leg.connect_us);
    first_byte.observe_us(leg.ttfb_us);
    total.observe_us(leg.total_us);
}

void ClientHolds::add(std::int64_t us) {
    if (us < 0) return;  // no hold
    ++count;
    held_us += static_cast<std::uint64_t>(us);
}

std::uint64_t resident_memory_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    if (!(statm >> size >> resident)) return 0;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

RunMetrics::RunMetrics(std::vector<std::string> proxies)
    : names_([&] {
          std::vector<std::string> names{std::string(kCollectorLabel)};
          names.insert(names.end(), proxies.begin(), proxies.end());
          return names;
      }()),
      series_(names_.size()) {}

void RunMetrics::add(const RecordTally& tally) {
    std::lock_guard lock(mutex_);
    holds_.add(tally.client_held_us);
    series_[0].add(tally.collector);
    for (std::size_t i = 0; i < tally.proxies.size() && i + 1 < series_.size(); ++i)
        series_[i + 1].add(tally.proxies[i]);
}

std::string RunMetrics::render(const ProcessGauges& process) const {
    std::vector<LegSeries> series;
    ClientHolds holds;
    {
        std::lock_guard lock(mutex_);
        series = series_;  // a few kilobytes: the writer thread waits no longer than this copy
        holds = holds_;
    }
    Exposition out;
    per_leg(out, names_, series, "spe_requests_total", "counter",
            "Legs recorded (the Collector's: client requests recorded); counted as each record is written",
            [](const LegSeries& s) { return s.requests; });
    write_results(out, names_, series);
    write_findings(out, names_, series, RuleSeverity::violation, "spe_judge_violations_total",
                   "Replies that broke a caching rule, by the judge's rule id (docs/cache-judge.md)");
    write_findings(out, names_, series, RuleSeverity::advisory, "spe_judge_advisories_total",
                   "Replies that did not follow an advisory caching rule (a SHOULD), by rule id");
    write_errors(out, names_, series);
    per_leg(out, names_, series, "spe_header_bytes_total", "counter", "Reply header bytes received",
            [](const LegSeries& s) { return s.header_bytes; });
    per_leg(out, names_, series, "spe_body_bytes_total", "counter", "Reply body bytes received (decoded)",
            [](const LegSeries& s) { return s.body_bytes; });
    write_latency(out, names_, series, "spe_connect_seconds",
                  "Time to connect, fresh connections only (a reused one has none)", &LegSeries::connect);
    write_latency(out, names_, series, "spe_first_byte_seconds",
                  "Time from the start of the attempt to the reply's first byte", &LegSeries::first_byte);
    write_latency(out, names_, series, "spe_response_seconds",
                  "Time from the start of the attempt to the reply's last byte", &LegSeries::total);
    write_holds(out, holds);
    write_process(out, process);
    return out.text();
}

}  // namespace spe
