// Where records go: JSON Lines (the primary contract, docs/log-format.md),
// ROPE's text format (one line per proxy, the paper's Figure 3) and, for
// mismatches, captures of both replies. Thread-safe; flushed every second and
// on shutdown.
#pragma once

#include "measurement.hpp"

#include <atomic>
#include <memory>
#include <string>

namespace spdlog {
class logger;
}

namespace spe {

struct Config;

class ResultLog {
public:
    explicit ResultLog(const Config& config);  // throws std::runtime_error if a file cannot be opened
    ~ResultLog();
    ResultLog(const ResultLog&) = delete;
    ResultLog& operator=(const ResultLog&) = delete;

    void write(const RequestRecord& record);
    void flush();
    std::uint64_t records_written() const { return written_.load(); }

private:
    void capture(const RequestRecord& record, const ProxyResult& proxy);

    std::shared_ptr<spdlog::logger> json_;
    std::shared_ptr<spdlog::logger> rope_;
    std::string capture_dir_;
    std::uint64_t capture_max_bytes_;
    std::atomic<std::uint64_t> captured_bytes_{0};
    std::atomic<std::uint64_t> written_{0};
};

/// One JSON Lines record (no trailing newline).
std::string to_json_line(const RequestRecord& record);
/// ROPE text lines (the Collector's first, then one per proxy), each ending in '\n'.
std::string to_rope_lines(const RequestRecord& record, long pid);

}  // namespace spe
