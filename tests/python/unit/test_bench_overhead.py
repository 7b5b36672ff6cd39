"""The overhead benchmark's pure parts: its Collector accounting (read with the analysis's access.log reader,
so a connection that sent no request is what the analysis says it is), its plan and its argument checks."""

from bench import overhead

DIRECT, CHOP, C1, C2 = 3128, 3129, 3130, 3131


def line(code: str, port: int, method: str = "GET", url: str = "http://127.0.0.1:8080/1k") -> str:
    """An access.log line in the Collector's format (spe_tools.rundir.access_log.SPE_LOGFORMAT)."""
    return (f"1795722971.075      0 127.0.0.1 {code} 1458 {method} {url} - HIER_NONE/- application/octet-stream "
            f"{port} 92 -")


def test_the_collector_log_counts_requests_per_side_codes_and_connections_without_a_request(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("\n".join([
        line("NONE_NONE/000", DIRECT, "-", "error:transaction-end-before-headers"),  # a readiness probe
        line("TCP_MISS/200", DIRECT), line("TCP_MEM_HIT/200", DIRECT), line("TCP_MEM_HIT/200", CHOP),
        line("TCP_MEM_HIT/200", C1), line("TCP_MEM_HIT/200", C2), line("TCP_MEM_HIT/200", 4000),  # unnamed: a proxy's
        line("NONE_NONE/000", C1, "NONE", "error:transaction-end-before-headers"),
        "", "not an access.log line"]) + "\n")
    sides, codes, probes = overhead.read_collector_log(log, {DIRECT: "direct", CHOP: "chop", C1: "c1", C2: "c2"})
    assert sides == {"collector client port": 2, "collector hop port": 1, "collector proxy ports": 3}
    assert codes == {"TCP_MISS": 1, "TCP_MEM_HIT": 5}
    assert probes == 2


def test_a_missing_collector_log_counts_nothing(tmp_path):
    assert overhead.read_collector_log(tmp_path / "absent.log", {}) == ({}, {}, 0)
