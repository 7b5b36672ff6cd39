#include "log/run_dir_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

namespace spe {
namespace fs = std::filesystem;
namespace {

/// The directory as the messages name it: absolute, so that "." or a relative path says which one.
std::string shown(const fs::path& directory) {
    auto path = fs::absolute(directory).lexically_normal();
    if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();  // "/run/." -> "/run"
    return path.string();
}

int open_lock_file(const fs::path& directory) {
    const auto file = directory / RunDirLock::kFileName;
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error(fmt::format("cannot lock the run directory {}: cannot open {}: {}", shown(directory),
                                             file.string(), std::strerror(errno)));
    return fd;
}

/// The pid the lock's holder wrote into the lock file; none when it has not written it yet.
std::optional<long> holder_pid(int fd) {
    std::array<char, 32> text{};
    const auto n = ::pread(fd, text.data(), text.size(), 0);
    long pid = 0;
    if (n <= 0 || std::from_chars(text.data(), text.data() + n, pid).ec != std::errc{} || pid <= 0) return {};
    return pid;
}

/// This process's pid in the lock file, in place of an earlier holder's.
void write_pid(int fd, const fs::path& directory) {
    const auto text = fmt::format("{}\n", ::getpid());
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
        spdlog::warn("cannot write this pid into {} (a Multiplier refused there cannot name this one): {}",
                     (directory / RunDirLock::kFileName).string(), std::strerror(errno));
}

/// Whether a log at `path` writes into its directory: a file there already or to be made (not /dev/null).
bool writes_a_run_dir(const std::string& path) {
    if (path.empty()) return false;
    std::error_code ec;
    const auto status = fs::status(path, ec);
    return !fs::exists(status) || fs::is_regular_file(status);
}

fs::path directory_of(const std::string& log_path) {
    const auto parent = fs::path(log_path).parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

RunDirLock::Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

RunDirLock::Fd::Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RunDirLock::Fd& RunDirLock::Fd::operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);  // ours, if any, is closed with `other`
    return *this;
}

RunDirLock::RunDirLock(const fs::path& directory) : fd_(open_lock_file(directory)) {
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        if (error != EWOULDBLOCK)
            throw std::runtime_error(
                fmt::format("cannot lock the run directory {}: {}", shown(directory), std::strerror(error)));
        const auto pid = holder_pid(fd_.get());
        throw RunDirBusy(fmt::format(
            "error: {} is being written by another Multiplier{}; give each Multiplier its own run directory",
            shown(directory), pid ? fmt::format(" (pid {})", *pid) : ""));
    }
    struct stat st {};
    if (::fstat(fd_.get(), &st) == 0) device_ = st.st_dev, inode_ = st.st_ino;
    write_pid(fd_.get(), directory);
}

bool RunDirLock::locks(const fs::path& directory) const {
    struct stat st {};
    return ::stat((directory / kFileName).c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_;
}

std::vector<RunDirLock> lock_run_dirs(const std::vector<std::string>& log_paths) {
    std::vector<RunDirLock> locks;
    for (const auto& path : log_paths) {
        if (!writes_a_run_dir(path)) continue;
        const auto directory = directory_of(path);
        // Both logs in one directory: one lock (a second flock of it, on the file opened again, would be refused).
        if (std::none_of(locks.begin(), locks.end(), [&](const auto& lock) { return lock.locks(directory); }))
            locks.emplace_back(directory);
    }
    return locks;
}

}  // namespace spe
