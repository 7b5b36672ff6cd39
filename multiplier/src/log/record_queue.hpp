// The hand-over between the I/O thread, which formats each record, and the
// writer thread, which puts it on disk (record_writer.hpp).
//
// Bounded by bytes: when the disk cannot keep up for long, records are
// dropped and counted rather than memory growing without limit or the I/O
// thread waiting for the disk (which would add the disk's latency to the next
// measured leg). The count is in the Multiplier's final log line.
#pragma once

#include "log/record_tally.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace spe {

/// A mismatch capture: a file of its own under --capture-dir.
struct CaptureFile {
    std::string path;
    std::string text;
};

/// Everything one record puts on disk, already formatted.
struct RecordWrite {
    std::string json;  // the JSON line with its newline, or empty without --log
    std::string rope;  // the ROPE lines, each with its newline, or empty without --rope-log
    std::vector<CaptureFile> captures;
    std::optional<RecordTally> tally;  // with --metrics-listen: what the record adds to the counters

    std::size_t bytes() const;
};

class RecordQueue {
public:
    /// `max_bytes`: the most queued at once. A record larger than that still
    /// goes in when the queue is empty, so one big capture is never refused for good.
    explicit RecordQueue(std::size_t max_bytes) : max_bytes_(max_bytes) {}

    /// Queues the record; false when it did not fit (or the queue is closed):
    /// it is dropped and counted. Wakes the writer only when the queue is half
    /// full: otherwise the writer's own period sets the pace, so a record costs
    /// the I/O thread no system call.
    bool push(RecordWrite record);
    /// Waits up to `period` (less when the queue is half full or closed), then
    /// moves every queued record to `out`, which must be empty (oldest first).
    /// False once closed and empty.
    bool pop_all(std::deque<RecordWrite>& out, std::chrono::milliseconds period);
    /// No more pushes; pop_all returns what is left, then false.
    void close();

    std::uint64_t dropped() const;
    std::size_t queued_bytes() const;

private:
    const std::size_t max_bytes_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<RecordWrite> records_;
    std::size_t bytes_ = 0;
    // Counted under the mutex, read without it: a scrape of /metrics never takes the lock pushes take.
    std::atomic<std::uint64_t> dropped_{0};
    bool closed_ = false;
};

}  // namespace spe
