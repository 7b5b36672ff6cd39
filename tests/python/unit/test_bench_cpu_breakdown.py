"""The CPU breakdown benchmark's readers of strace and callgrind output (pure functions, small inputs)."""


from bench.cpu_breakdown import OTHER, by_component, parse_strace_summary
from bench.lib.callgrind import callgrind_costs

STRACE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 16.53    0.307267          10     28746           sendmsg
 10.95    0.203521           7     28757         8 recvfrom
  0.03    0.000601          12        50        50 connect
------ ----------- ----------- --------- --------- ----------------
100.00    1.859371          27     57553        58 total
"""

ANNOTATE = """\
--------------------------------------------------------------------------------
1,000 (100.0%)  PROGRAM TOTALS
--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
1,000 (100.0%)  /work/main/multiplier/src/main.cpp:main [/work/main/build/release/multiplier/spe-multiplier]
  400 (40.00%)  ???:0x0000000000240ce0 [/usr/lib/x86_64-linux-gnu/libcrypto.so.3]
  200 (20.00%)  /usr/include/boost/beast/http/impl/basic_parser.ipp:boost::beast::http::basic_parser<false>::put() [/m]
  150 (15.00%)  ???:free [/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0]
  100 (10.00%)  /usr/include/boost/asio/detail/impl/scheduler.ipp:boost::asio::detail::scheduler::do_run_one() [/x/m]
   90 ( 9.00%)  /usr/include/c++/12/bits/basic_string.h:void spe::JsonWriter::key<(MemberName<6ul>){\"x\"}>() [/x/m]
   60 ( 6.00%)  ???:mystery [/opt/elsewhere.so]
"""


def test_strace_summary_gives_calls_per_syscall_without_the_total():
    assert parse_strace_summary(STRACE) == {"sendmsg": 28746, "recvfrom": 28757, "connect": 50}


def test_callgrind_rows_leave_out_the_functions_on_the_stack_at_the_dump():
    total, rows = callgrind_costs(ANNOTATE)
    assert total == 1000
    assert [cost for cost, _ in rows] == [400, 200, 150, 100, 90, 60]  # main (the whole total) is not its own cost


def test_instructions_are_grouped_by_component_and_nothing_is_lost():
    total, rows = callgrind_costs(ANNOTATE)
    parts = by_component(rows)
    assert parts["MD5 of every body (OpenSSL)"] == 400
    assert parts["HTTP parsing and header fields (Beast)"] == 200
    assert parts["heap allocation (malloc, free, new, delete)"] == 150
    assert parts["JSON record and log writing (SPE, spdlog, fmt)"] == 90  # inlined std::string code, our function
    assert parts["Asio and Beast I/O: reactor, scheduler, coroutines, composed reads and writes"] == 100
    assert parts[OTHER] == 60
    assert list(parts)[0] == "MD5 of every body (OpenSSL)" and list(parts)[-1] == OTHER
    assert sum(parts.values()) == total
