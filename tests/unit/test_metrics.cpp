// The live counters (--metrics-listen): the Prometheus text format as written, a record's tally, the series a
// run's counters render (who may scrape them: test_config.cpp).
#include "judge/cache_rule_catalogue.hpp"
#include "log/record_tally.hpp"
#include "metrics/exposition.hpp"
#include "metrics/run_metrics.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

namespace {

bool has_line(const std::string& text, const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

spe::RequestRecord record_with_two_proxies() {
    spe::RequestRecord r;
    r.collector.status = 200;
    r.collector.header_bytes = 100;
    r.collector.bytes = 1000;
    r.collector.connect_us = 0;  // reused: no connect time
    r.collector.ttfb_us = 300;   // 0.0003 s
    r.collector.total_us = 2'000'000;
    spe::ProxyResult hit{"a", {}, spe::ResultClass::ok, {}};
    hit.measure.bytes = 1000;
    hit.measure.connect_us = 50;
    hit.measure.ttfb_us = 80;
    hit.measure.total_us = 90;
    hit.measure.cache.emplace();
    hit.measure.cache->violations.push_back({spe::cache_rule("no-store"), "reused"});
    hit.measure.cache->advisories.push_back({spe::cache_rule("heuristic"), "too long"});
    spe::ProxyResult dead{"b", {}, spe::ResultClass::no_response, {}};
    dead.measure.error = spe::LegError::timeout;
    r.proxies = {hit, dead};
    return r;
}

}  // namespace

TEST_CASE("label values escape backslash, double quote and line feed, nothing else") {
    CHECK(spe::escape_label_value("plain-name 1") == "plain-name 1");
    CHECK(spe::escape_label_value("a\\b") == "a\\\\b");
    CHECK(spe::escape_label_value("say \"hi\"") == "say \\\"hi\\\"");
    CHECK(spe::escape_label_value("two\nlines") == "two\\nlines");
    spe::Exposition out;
    out.family("spe_x_total", "counter", "help with a \\, a \"quote\" and a\nnew line");  // HELP leaves the quote
    out.sample("spe_x_total", {{"proxy", "q\"x"}}, std::uint64_t{3});
    CHECK(out.text() ==
          "# HELP spe_x_total help with a \\\\, a \"quote\" and a\\nnew line\n# TYPE spe_x_total counter\n"
          "spe_x_total{proxy=\"q\\\"x\"} 3\n");
}

TEST_CASE("a sample without labels has no braces") {
    spe::Exposition out;
    out.sample("process_resident_memory_bytes", {}, std::uint64_t{4096});
    CHECK(out.text() == "process_resident_memory_bytes 4096\n");
}

TEST_CASE("a histogram is written cumulative, with +Inf, _sum and _count") {
    const std::array bounds{0.001, 0.01, 1.0};
    const std::array<std::uint64_t, 4> counts{2, 0, 3, 1};  // the last: above every bound
    spe::Exposition out;
    out.histogram("spe_t_seconds", {{"proxy", "a"}}, bounds, counts, 4.5);
    CHECK(out.text() ==
          "spe_t_seconds_bucket{proxy=\"a\",le=\"0.001\"} 2\n"
          "spe_t_seconds_bucket{proxy=\"a\",le=\"0.01\"} 2\n"
          "spe_t_seconds_bucket{proxy=\"a\",le=\"1\"} 5\n"
          "spe_t_seconds_bucket{proxy=\"a\",le=\"+Inf\"} 6\n"
          "spe_t_seconds_sum{proxy=\"a\"} 4.5\n"
          "spe_t_seconds_count{proxy=\"a\"} 6\n");
}

TEST_CASE("an observation goes in the first bucket whose bound it does not exceed") {
    spe::LatencyHistogram h;
    h.observe_us(100);         // 0.0001 s: exactly the first bound
    h.observe_us(101);         // just above it
    h.observe_us(60'000'000);  // a minute: above every bound
    h.observe_us(-1);          // not measured: not observed
    CHECK(h.counts[0] == 1);
    CHECK(h.counts[1] == 1);
    CHECK(h.counts.back() == 1);
    CHECK(h.sum == Approx(60.000201));
}

TEST_CASE("a record's tally keeps each leg's class, error, bytes, times and findings") {
    const auto tally = spe::tally_of(record_with_two_proxies());
    CHECK(tally.collector.result == spe::ResultClass::ok);
    CHECK(tally.collector.connect_us == -1);  // a reused connection has no connect time
    CHECK(tally.collector.ttfb_us == 300);
    REQUIRE(tally.proxies.size() == 2);
    CHECK(tally.proxies[0].connect_us == 50);
    CHECK(tally.proxies[0].violations == std::vector<std::string_view>{"no-store"});
    CHECK(tally.proxies[0].advisories == std::vector<std::string_view>{"heuristic"});
    CHECK(tally.proxies[1].result == spe::ResultClass::no_response);
    CHECK(tally.proxies[1].error == spe::LegError::timeout);

    auto failed = record_with_two_proxies();
    failed.collector.error = spe::LegError::bad_header;
    CHECK(spe::tally_of(failed).collector.result == spe::ResultClass::protocol_error);
    failed.collector.error = spe::LegError::reset;
    CHECK(spe::tally_of(failed).collector.result == spe::ResultClass::no_response);
}

TEST_CASE("the run's counters render every series of every leg, zeros included") {
    spe::RunMetrics metrics({"a", "b"});
    metrics.add(spe::tally_of(record_with_two_proxies()));
    metrics.add(spe::tally_of(record_with_two_proxies()));
    spe::RecordTally no_fanout;  // a request without fan-out: the Collector's leg only
    metrics.add(no_fanout);
    const auto text = metrics.render({4, 1, 3, 5, 6, 1 << 20});  // each gauge its own value

    CHECK(has_line(text, "# TYPE spe_requests_total counter"));
    CHECK(has_line(text, "spe_requests_total{proxy=\"collector\"} 3"));
    CHECK(has_line(text, "spe_requests_total{proxy=\"a\"} 2"));
    CHECK(has_line(text, "spe_results_total{proxy=\"a\",class=\"OK\"} 2"));
    CHECK(has_line(text, "spe_results_total{proxy=\"b\",class=\"NO_RESPONSE\"} 2"));
    CHECK(has_line(text, "spe_results_total{proxy=\"b\",class=\"OK\"} 0"));
    CHECK(has_line(text, "spe_judge_violations_total{proxy=\"a\",rule=\"no-store\"} 2"));
    CHECK(has_line(text, "spe_judge_violations_total{proxy=\"b\",rule=\"vary\"} 0"));
    CHECK(has_line(text, "spe_judge_advisories_total{proxy=\"a\",rule=\"heuristic\"} 2"));
    CHECK(text.find("spe_judge_violations_total{proxy=\"a\",rule=\"heuristic\"}") == std::string::npos);
    CHECK(has_line(text, "spe_leg_errors_total{proxy=\"b\",kind=\"timeout\"} 2"));
    CHECK(has_line(text, "spe_leg_errors_total{proxy=\"a\",kind=\"refused\"} 0"));  // a leg without error counts none
    CHECK(has_line(text, "spe_leg_errors_total{proxy=\"collector\",kind=\"refused\"} 0"));
    CHECK(text.find("kind=\"none\"") == std::string::npos);
    CHECK(has_line(text, "spe_body_bytes_total{proxy=\"collector\"} 2000"));
    CHECK(has_line(text, "spe_connect_seconds_count{proxy=\"collector\"} 0"));
    CHECK(has_line(text, "spe_connect_seconds_bucket{proxy=\"a\",le=\"0.0001\"} 2"));
    CHECK(has_line(text, "spe_first_byte_seconds_bucket{proxy=\"collector\",le=\"0.00025\"} 0"));
    CHECK(has_line(text, "spe_first_byte_seconds_bucket{proxy=\"collector\",le=\"0.0005\"} 2"));
    CHECK(has_line(text, "spe_response_seconds_bucket{proxy=\"collector\",le=\"+Inf\"} 2"));
    CHECK(has_line(text, "spe_response_seconds_sum{proxy=\"collector\"} 4"));
    CHECK(has_line(text, "spe_client_connections 4"));
    CHECK(has_line(text, "spe_requests_in_flight 1"));
    CHECK(has_line(text, "spe_records_written_total 3"));
    CHECK(has_line(text, "spe_records_dropped_total 5"));
    CHECK(has_line(text, "spe_records_failed_total 6"));
    CHECK(has_line(text, "process_resident_memory_bytes 1048576"));
}

TEST_CASE("the client's holds are counted, with their time in all, from the records that carry one") {
    auto held = record_with_two_proxies();
    CHECK(spe::tally_of(held).client_held_us == -1);  // no hold before this request
    held.client_held_us = 1'500;
    CHECK(spe::tally_of(held).client_held_us == 1'500);

    spe::RunMetrics metrics({"a", "b"});
    CHECK(has_line(metrics.render({}), "spe_client_holds_total 0"));  // there from the start
    metrics.add(spe::tally_of(held));
    metrics.add(spe::tally_of(record_with_two_proxies()));
    held.client_held_us = 2'000'000;
    metrics.add(spe::tally_of(held));
    held.client_held_us = 0;  // held, though for less than a microsecond
    metrics.add(spe::tally_of(held));
    const auto text = metrics.render({});
    CHECK(has_line(text, "# TYPE spe_client_holds_total counter"));
    CHECK(has_line(text, "spe_client_holds_total 3"));
    CHECK(has_line(text, "# TYPE spe_client_held_seconds_total counter"));
    CHECK(has_line(text, "spe_client_held_seconds_total 2.0015"));
}

TEST_CASE("the process's resident memory is read from /proc") {
    CHECK(spe::resident_memory_bytes() > 1024 * 1024);
}
