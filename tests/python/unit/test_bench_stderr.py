"""What the benchmarks count as a server's problem in its output: warnings, errors and crashes, but not the
Multiplier's start-up note about a choice every benchmark makes on purpose (no --replay-listen: they send no
unsafe request), which made every benchmark with proxies exit 1."""


from bench.lib.logs import stderr_problems

REPLAY_NOTE = ("[2026-11-26 17:42:35.515] [spe] [warning] no --replay-listen: unsafe requests (POST, PUT, PATCH, "
               "DELETE...) go to the Collector only")


def test_the_replay_listen_note_is_no_problem_but_other_warnings_and_crashes_are(tmp_path):
    log = tmp_path / "multiplier.log"
    log.write_text("\n".join([REPLAY_NOTE, "[2026-11-26 17:42:36.000] [spe] [info] listening on 127.0.0.1:1",
                              "[2026-11-26 17:42:37.000] [spe] [warning] record queue full: 3 records dropped",
                              "AddressSanitizer: heap-use-after-free"]) + "\n")
    assert stderr_problems(log) == ["[2026-11-26 17:42:37.000] [spe] [warning] record queue full: 3 records dropped",
                                    "AddressSanitizer: heap-use-after-free"]
