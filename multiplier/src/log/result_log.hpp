// Where records go: JSON Lines (the primary contract, docs/log-format.md,
// record_json.hpp), ROPE's text format (rope_lines.hpp) and, for mismatches,
// captures of both replies (mismatch_capture.hpp). A record is formatted on the
// calling (I/O) thread and written by a writer thread (record_writer.hpp), so
// the disk never delays a measurement. Thread-safe.
#pragma once

#include "core/measurement.hpp"
#include "log/mismatch_capture.hpp"
#include "log/record_tally.hpp"
#include "log/record_writer.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace spe {

struct Config;

class ResultLog {
public:
    /// Throws std::runtime_error if a file cannot be opened. With `tallies`, each record written is also
    /// counted there (record_tally.hpp), on the writer thread.
    explicit ResultLog(const Config& config, RecordTallySink* tallies = nullptr);
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
    bool json_ = false;
    bool rope_ = false;
    bool tally_ = false;
    std::string name_;  // --name: each JSON record's `multiplier`
    RecordWriter writer_;
    std::optional<MismatchCaptures> captures_;  // with --capture-dir
};

}  // namespace spe
