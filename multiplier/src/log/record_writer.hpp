// The writer thread: takes formatted records from a bounded queue and puts
// them on disk (the JSON log, the ROPE log, mismatch captures), so that no
// write, flush or file creation runs on an I/O thread, where a slow disk
// would add its latency to whichever leg completes next.
//
// Records are written in the order they were queued, in batches: the writer
// wakes every 100 ms (sooner when the queue is half full), writes what is
// queued and flushes. close() writes everything still queued.
#pragma once

#include "log/record_queue.hpp"

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

namespace spe {

class RecordWriter {
public:
    static constexpr std::chrono::milliseconds kPeriod{100};
    /// Each file's stdio buffer: what a period of records at thousands a second fills a few times.
    static constexpr std::size_t kFileBuffer = 256 * 1024;

    /// Opens (appends to) the files; an empty path writes no such file. Each
    /// written record's tally goes to `tallies` (if any), on the writer thread.
    /// Throws std::runtime_error with the cause if a file cannot be opened.
    RecordWriter(const std::string& json_path, const std::string& rope_path, std::size_t queue_bytes,
                 RecordTallySink* tallies = nullptr);
    ~RecordWriter();
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    /// From any thread; never waits for the disk. False: the queue was full,
    /// the record is dropped (and counted).
    bool submit(RecordWrite record);
    /// Writes what is queued, flushes and stops the thread. Later submits are dropped.
    void close();

    std::uint64_t written() const { return written_.load(); }
    std::uint64_t dropped() const { return queue_.dropped(); }
    /// Records of which a part could not be written (disk full, I/O error).
    std::uint64_t failed() const { return failed_.load(); }

private:
    struct FileCloser {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    using File = std::unique_ptr<std::FILE, FileCloser>;

    void run();
    /// False if a part of it could not be written.
    bool write(const RecordWrite& record);
    void flush();

    /// A log file and the stdio buffer it writes through (ours: glibc takes a size only with a buffer).
    struct LogFile {
        std::unique_ptr<char[]> buffer;  // before the file: closed before it is freed
        File file;

        std::FILE* get() const { return file.get(); }
        explicit operator bool() const { return file != nullptr; }
    };
    /// Opens (appends to) `path` with a kFileBuffer buffer; an empty path: no file.
    static LogFile open(const std::string& path);

    LogFile json_;
    LogFile rope_;
    RecordQueue queue_;
    RecordTallySink* tallies_;
    std::atomic<std::uint64_t> written_{0};
    std::atomic<std::uint64_t> failed_{0};
    std::thread thread_;
};

}  // namespace spe
