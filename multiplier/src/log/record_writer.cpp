#include "log/record_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace spe {
namespace {

bool put(std::FILE* f, const std::string& text) {
    return !f || text.empty() || std::fwrite(text.data(), 1, text.size(), f) == text.size();
}

/// One writer per log file. Two Multipliers appending to one file would interleave two numberings of `id` (each
/// counts from 1) and make one run of two evaluations. A POSIX record lock on the whole file, held until the
/// process ends (a crashed Multiplier's lock goes with it, so a restarted one takes the log over); not flock,
/// because a refused lock then names its holder's pid. Only regular files: /dev/null or a pipe has no owner.
void claim(std::FILE* f, const std::string& path) {
    const int fd = ::fileno(f);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;  // l_start 0, l_len 0: the whole file, however long it grows
    if (::fcntl(fd, F_SETLK, &lock) == 0) return;
    if (errno != EACCES && errno != EAGAIN)
        throw std::runtime_error(fmt::format("cannot lock log file {}: {}", path, std::strerror(errno)));
    struct flock holder = lock;
    const bool known = ::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
    throw std::runtime_error(fmt::format(
        "log file {} is being written by another Multiplier{}: each Multiplier needs a log (and a run directory) "
        "of its own",
        path, known ? fmt::format(" (pid {})", holder.l_pid) : ""));
}

}  // namespace

RecordWriter::RecordWriter(const std::string& json_path, const std::string& rope_path, std::size_t queue_bytes,
                           RecordTallySink* tallies)
    : queue_(queue_bytes), tallies_(tallies) {
    json_ = open(json_path);
    rope_ = open(rope_path);
    thread_ = std::thread([this] { run(); });
}

RecordWriter::LogFile RecordWriter::open(const std::string& path) {
    if (path.empty()) return {};
    File f(std::fopen(path.c_str(), "ab"));
    if (!f) throw std::runtime_error("cannot open log file " + path + ": " + std::strerror(errno));
    claim(f.get(), path);
    // A batch in a few writes: through stdio's default buffer (the file system's 4 KiB block) a
    // judged record of 3 KB cost a write system call of its own, nearly one per client request.
    auto buffer = std::make_unique_for_overwrite<char[]>(kFileBuffer);
    std::setvbuf(f.get(), buffer.get(), _IOFBF, kFileBuffer);
    return {std::move(buffer), std::move(f)};
}

RecordWriter::~RecordWriter() {
    close();
}

bool RecordWriter::submit(RecordWrite record) {
    if (queue_.push(std::move(record))) return true;
    // The first drop is said at once; the total is in the final log line.
    if (queue_.dropped() == 1)
        spdlog::error("the record writer is behind (slow disk?): records are being dropped and counted");
    return false;
}

void RecordWriter::close() {
    queue_.close();
    if (thread_.joinable()) thread_.join();
}

void RecordWriter::run() {
    std::deque<RecordWrite> batch;
    while (queue_.pop_all(batch, kPeriod)) {
        for (const auto& record : batch) {
            if (write(record)) {
                ++written_;
                if (tallies_ && record.tally) tallies_->add(*record.tally);
            } else if (++failed_ == 1)
                spdlog::error("cannot write a record: {}", std::strerror(errno));
        }
        if (!batch.empty()) flush();
        batch.clear();
    }
    flush();
}

bool RecordWriter::write(const RecordWrite& record) {
    bool ok = put(json_.get(), record.json) && put(rope_.get(), record.rope);
    for (const auto& c : record.captures) {
        std::ofstream out(c.path, std::ios::binary);
        out << c.text;
        ok = ok && out.good();
    }
    return ok;
}

void RecordWriter::flush() {
    if (json_) std::fflush(json_.get());
    if (rope_) std::fflush(rope_.get());
}

}  // namespace spe
