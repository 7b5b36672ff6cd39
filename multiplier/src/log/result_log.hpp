// Where records go: JSON Lines (the primary contract, docs/log-format.md),
// ROPE's text format (one line per proxy, the paper's Figure 3) and, for
// mismatches, captures of both replies. A record is formatted on the calling
// (I/O) thread and written by a writer thread (record_writer.hpp), so the disk
// never delays a measurement. Thread-safe.
#pragma once

#include "core/measurement.hpp"
#include "log/record_writer.hpp"

#include <atomic>
#include <optional>
#include <string>

namespace spe {

struct Config;

class ResultLog {
public:
    explicit ResultLog(const Config& config);  // throws std::runtime_error if a file cannot be opened
    ResultLog(const ResultLog&) = delete;
    ResultLog& operator=(const ResultLog&) = delete;

    /// Formats the record and queues it for the writer; never waits for the disk.
    void write(const RequestRecord& record);
    /// Writes every queued record and stops the writer (at exit, after the last write()).
    void close() { writer_.close(); }
    std::uint64_t records_written() const { return writer_.written(); }
    /// Records lost because the writer was too far behind (the queue was full).
    std::uint64_t records_dropped() const { return writer_.dropped(); }
    /// Records the disk refused (in part or whole).
    std::uint64_t records_failed() const { return writer_.failed(); }

private:
    std::optional<CaptureFile> capture(const RequestRecord& record, const ProxyResult& proxy);

    std::string capture_dir_;
    std::uint64_t capture_max_bytes_;
    std::atomic<std::uint64_t> captured_bytes_{0};
    bool capture_secrets_ = false;  // --capture-secrets: secret fields' values as received
    bool json_ = false;
    bool rope_ = false;
    RecordWriter writer_;
};

/// One JSON Lines record (no trailing newline).
std::string to_json_line(const RequestRecord& record);
/// ROPE text lines (the Collector's first, then one per proxy), each ending in '\n'.
std::string to_rope_lines(const RequestRecord& record, long pid);
/// A mismatch capture's text: the request, the result, both reply headers and
/// body heads; with `secrets` false, the values of Cookie, Set-Cookie,
/// Authorization and Proxy-Authorization as the process's keyed digest.
std::string capture_text(const RequestRecord& record, const ProxyResult& proxy, bool secrets);

}  // namespace spe
