// One Multiplier per run directory. An evaluation may run several Multipliers (one per client group or host)
// and merge their logs into one report, which takes a run directory's files as one Multiplier's: two writing
// one directory would mix two numberings of `id` into what reads as one run. So a Multiplier that writes a
// log holds `.multiplier.lock` in that log's directory while it runs, and a second one is refused before it
// listens.
//
// The lock is flock(2), exclusive and non-blocking: it belongs to the open file, so the kernel releases it
// however the process ends (a crash, SIGKILL) and a lock file left behind never blocks the next Multiplier;
// and unlike a POSIX record lock, a second lock of the same file within one process is refused as well (what
// the unit test relies on). flock cannot name its holder, so the holder writes its pid into the file, for the
// refusal's message.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace spe {

/// Another process holds the run directory's lock; what() is the message for the user.
class RunDirBusy : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class RunDirLock {
public:
    static constexpr const char* kFileName = ".multiplier.lock";

    /// Locks `directory` (its lock file made if missing) until this object goes. Throws RunDirBusy when
    /// another holder has it, std::runtime_error when the lock file cannot be opened or locked.
    explicit RunDirLock(const std::filesystem::path& directory);

    /// Whether this lock is the one of `directory`, however it is spelled (its lock file's device and inode).
    bool locks(const std::filesystem::path& directory) const;

private:
    /// An open file descriptor, closed when it goes (which releases a flock on it).
    class Fd {
    public:
        explicit Fd(int fd) : fd_(fd) {}
        ~Fd();
        Fd(Fd&& other) noexcept;
        Fd& operator=(Fd&& other) noexcept;
        Fd(const Fd&) = delete;
        Fd& operator=(const Fd&) = delete;
        int get() const { return fd_; }

    private:
        int fd_;
    };

    Fd fd_;  // the lock file, open while the lock is held
    dev_t device_ = 0;
    ino_t inode_ = 0;
};

/// The locks of the directories these log files are written in, each directory once. An empty path writes no
/// log; a path that is there but not a regular file (/dev/null, a pipe) writes no run directory: neither is
/// locked. Throws as RunDirLock does.
std::vector<RunDirLock> lock_run_dirs(const std::vector<std::string>& log_paths);

}  // namespace spe
