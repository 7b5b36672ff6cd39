#include "result_log.hpp"

#include "config.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace spe {
namespace {

nlohmann::json opt(const std::optional<std::int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json measure_json(const Measure& m) {
    return {
        {"status", m.status ? nlohmann::json(*m.status) : nlohmann::json()},
        {"http_version",
         m.version ? nlohmann::json(fmt::format("HTTP/{}.{}", m.version / 10, m.version % 10)) : nlohmann::json()},
        {"header_bytes", m.header_bytes},
        {"bytes", m.bytes},
        {"md5", m.md5 ? nlohmann::json(*m.md5) : nlohmann::json()},
        {"connect_us", opt(m.connect_us)},
        {"ttfb_us", opt(m.ttfb_us)},
        {"total_us", opt(m.total_us)},
    };
}

nlohmann::json error_json(const Measure& m) {
    return m.error == LegError::none ? nlohmann::json() : nlohmann::json(std::string(to_string(m.error)));
}

std::shared_ptr<spdlog::logger> open_record_file(const std::string& name, const std::string& path) {
    if (path.empty()) return nullptr;
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::off);
    spdlog::register_logger(logger);  // so spdlog::flush_every covers it
    return logger;
}

std::string seconds_micros(const std::optional<std::int64_t>& us) {
    const auto v = us.value_or(0);
    return fmt::format("{}:{}", v / 1'000'000, v % 1'000'000);
}

std::string ctime_of(double ts) {
    auto t = static_cast<std::time_t>(ts);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S %Y", &tm);
    return buf;
}

}  // namespace

std::string to_json_line(const RequestRecord& r) {
    nlohmann::json collector = measure_json(r.collector);
    collector["error"] = error_json(r.collector);
    collector["error_detail"] =
        r.collector.error_detail.empty() ? nlohmann::json() : nlohmann::json(r.collector.error_detail);
    nlohmann::json proxies = nlohmann::json::array();
    for (const auto& p : r.proxies) {
        auto j = measure_json(p.measure);
        j["name"] = p.name;
        j["position"] = p.position;
        j["result"] = std::string(to_string(p.result));
        j["mismatched_headers"] = p.mismatched_headers;
        j["error"] = error_json(p.measure);
        j["error_detail"] = p.measure.error_detail.empty() ? nlohmann::json() : nlohmann::json(p.measure.error_detail);
        proxies.push_back(std::move(j));
    }
    nlohmann::json j = {
        {"ts", std::round(r.ts * 1e6) / 1e6},
        {"id", r.id},
        {"client", r.client},
        {"method", r.method},
        {"url", r.url},
        {"version", r.version},
        {"validation", r.validation},
        {"client_status", r.client_status},
        {"note", r.note.empty() ? nlohmann::json() : nlohmann::json(r.note)},
        {"collector", std::move(collector)},
        {"proxies", std::move(proxies)},
    };
    // Client-supplied URLs may hold invalid UTF-8: replace, never throw.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string to_rope_lines(const RequestRecord& r, long pid) {
    // Figure 3: date:(pid):RESULT: name: initial-latency transfer-time size {validation} client type version method url
    const auto client_ip = r.client.substr(0, r.client.rfind(':'));
    const auto tail = fmt::format("{} {} {} {} {}", client_ip, r.validation ? "validation" : "non-validation",
                                  r.version, r.method, r.url);
    const auto prefix = fmt::format("{}:(pid={}):RESULT: ", ctime_of(r.ts), pid);
    auto transfer = [](const Measure& m) -> std::optional<std::int64_t> {
        if (!m.total_us || !m.ttfb_us) return std::nullopt;
        return *m.total_us - *m.ttfb_us;
    };
    std::string out = fmt::format("{}Collector: {} {} {} {{DUMMY,}} {}\n", prefix, seconds_micros(r.collector.ttfb_us),
                                  seconds_micros(transfer(r.collector)), r.collector.bytes, tail);
    const auto ref_status = r.collector.status ? std::to_string(*r.collector.status) : "-";
    for (const auto& p : r.proxies) {
        std::string validation = fmt::format(
            "{},{},{},", ref_status, p.measure.status ? std::to_string(*p.measure.status) : "-", to_string(p.result));
        if (p.result == ResultClass::header_mismatch)
            for (const auto& h : p.mismatched_headers)
                validation += h + ",";
        out += fmt::format("{}{}: {} {} {} {{{}}} {}\n", prefix, p.name, seconds_micros(p.measure.ttfb_us),
                           seconds_micros(transfer(p.measure)), p.measure.bytes, validation, tail);
    }
    return out;
}

ResultLog::ResultLog(const Config& config)
    : capture_dir_(config.capture_dir), capture_max_bytes_(config.capture_max_bytes) {
    try {
        json_ = open_record_file("spe-records", config.log_path);
        rope_ = open_record_file("spe-rope", config.rope_log_path);
    } catch (const spdlog::spdlog_ex& e) {
        throw std::runtime_error(std::string("cannot open log file: ") + e.what());
    }
    if (!capture_dir_.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(capture_dir_, ec);
        if (ec) throw std::runtime_error("cannot create --capture-dir " + capture_dir_ + ": " + ec.message());
    }
}

ResultLog::~ResultLog() {
    flush();
    // Out of spdlog's registry, so its periodic flusher never sees a dead logger.
    if (json_) spdlog::drop(json_->name());
    if (rope_) spdlog::drop(rope_->name());
}

void ResultLog::write(const RequestRecord& record) {
    if (json_) json_->log(spdlog::level::info, spdlog::string_view_t(to_json_line(record)));
    if (rope_) {
        auto lines = to_rope_lines(record, static_cast<long>(::getpid()));
        lines.pop_back();  // the sink adds the last newline
        rope_->log(spdlog::level::info, spdlog::string_view_t(lines));
    }
    if (!capture_dir_.empty())
        for (const auto& p : record.proxies)
            if (p.result != ResultClass::ok && p.result != ResultClass::no_response) capture(record, p);
    ++written_;
}

void ResultLog::capture(const RequestRecord& r, const ProxyResult& p) {
    std::string text = fmt::format(
        "# SPE mismatch capture\nrequest: {} {} {} {}\nproxy: {}\nresult: {}\nmismatched headers: {}\nerror: {} {}\n"
        "\n## Collector reply header\n{}\n## Collector body: first {} of {} bytes, md5 {}\n{}\n"
        "\n## Proxy reply header\n{}\n## Proxy body: first {} of {} bytes, md5 {}\n{}\n",
        r.id, r.method, r.url, r.version, p.name, to_string(p.result), fmt::join(p.mismatched_headers, ", "),
        to_string(p.measure.error), p.measure.error_detail, r.collector.raw_header, r.collector.body_head.size(),
        r.collector.bytes, r.collector.md5.value_or("-"), r.collector.body_head, p.measure.raw_header,
        p.measure.body_head.size(), p.measure.bytes, p.measure.md5.value_or("-"), p.measure.body_head);
    if (captured_bytes_.fetch_add(text.size()) + text.size() > capture_max_bytes_) return;
    std::ofstream out(std::filesystem::path(capture_dir_) / fmt::format("{:08}-{}.txt", r.id, p.name),
                      std::ios::binary);
    out << text;
}

void ResultLog::flush() {
    if (json_) json_->flush();
    if (rope_) rope_->flush();
}

}  // namespace spe
