// One Multiplier per run directory (log/run_dir_lock.hpp): a second lock of a directory is refused, naming
// the holder's pid, while the first is held, and taken once it has gone.
#include "log/run_dir_lock.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace fs = std::filesystem;

namespace {

/// A fresh directory of this test's own, removed when it goes.
struct TempRunDir {
    fs::path path = fs::temp_directory_path() / ("spe-test-run-dir-lock-" + std::to_string(::getpid()));
    TempRunDir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempRunDir() { fs::remove_all(path); }
    TempRunDir(const TempRunDir&) = delete;
    TempRunDir& operator=(const TempRunDir&) = delete;
};

}  // namespace

TEST_CASE("run dir lock: a second lock is refused while the first is held, and taken after it is released") {
    TempRunDir run;
    std::optional<spe::RunDirLock> first(std::in_place, run.path);
    std::ifstream pid_file(run.path / spe::RunDirLock::kFileName);
    long pid = 0;
    pid_file >> pid;
    CHECK(pid == ::getpid());  // the holder names itself, for the refusal's message

    const auto refused = "is being written by another Multiplier (pid " + std::to_string(::getpid()) +
                         "); give each Multiplier its own run directory";
    CHECK_THROWS_AS(spe::RunDirLock(run.path), spe::RunDirBusy);
    CHECK_THROWS_WITH(spe::RunDirLock(run.path),
                      Catch::StartsWith("error: " + run.path.string()) && Catch::Contains(refused));
    // Spelled otherwise (a log beside another in the same directory): the same directory, refused too.
    CHECK_THROWS_AS(spe::RunDirLock(run.path / "."), spe::RunDirBusy);

    first.reset();
    CHECK_NOTHROW(spe::RunDirLock(run.path));
}

TEST_CASE("run dir lock: the logs' directories, each locked once; no lock for no log or a device") {
    TempRunDir run;
    fs::create_directories(run.path / "rope");
    const auto json = (run.path / "multiplier.jsonl").string();
    const auto rope_beside = (run.path / "." / "multiplier.rope.log").string();
    CHECK(spe::lock_run_dirs({json, rope_beside}).size() == 1);  // one directory, however spelled
    CHECK(spe::lock_run_dirs({json, (run.path / "rope" / "r.log").string()}).size() == 2);
    CHECK(spe::lock_run_dirs({"", "/dev/null"}).empty());

    const auto held = spe::lock_run_dirs({json});
    CHECK_THROWS_AS(spe::lock_run_dirs({(run.path / "other.jsonl").string()}), spe::RunDirBusy);
    CHECK_NOTHROW(spe::lock_run_dirs({(run.path / "rope" / "r.log").string()}));
}

TEST_CASE("run dir lock: a directory that is not there is a clear error, not a refusal") {
    TempRunDir run;
    CHECK_THROWS_WITH(spe::RunDirLock(run.path / "missing"),
                      Catch::Contains("cannot lock the run directory") && Catch::Contains("No such file"));
}
