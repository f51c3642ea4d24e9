"""What the seccomp filters cost per process: loading them in forked children (issue 28, item 6).

    python -m benchmarks.sandbox_seccomp [N]

N forked children (default 200) each time one step, reported as median and 10th percentile in microseconds:

* ``candidate_load``: the candidate child's step, ``_seccomp.install()`` (libseccomp generates the BPF from the
  filter context the warm worker built once, sets no_new_privs and loads it);
* ``candidate_raw_prctl``: the same BPF program (exported by libseccomp once, in this process) loaded with two
  ``prctl`` calls, the floor of any loader (what the old hand-assembled filter did, minus assembling it);
* ``slot_server_build_and_load``: a slot server's step, ``_seccomp.install_slot_server()`` on top of the candidate
  filter (built per server: it names the server's pid);
* ``fork_only``: a child that does nothing, the fork-and-report cost every row includes.

Writes ``benchmarks/results/sandbox_seccomp.json`` with the machine's load beside the figures.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _in_child(step: Callable[[], Any], n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            started = time.perf_counter()
            step()
            os.write(write_end, repr(time.perf_counter() - started).encode())
            os._exit(0)
        os.close(write_end)
        times.append(float(os.read(read_end, 100)) * 1e6)
        os.close(read_end)
        os.waitpid(pid, 0)
    times.sort()
    return {"median_us": statistics.median(times), "p10_us": times[len(times) // 10]}


def _raw_loader(program: bytes) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))

    def load() -> None:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                                     ctypes.byref(fprog), 0, 0):
            raise OSError(ctypes.get_errno(), "prctl failed")
    return load


def main(n: int = 200) -> dict[str, Any]:
    from hifo.sandbox import _seccomp

    ok, why = _seccomp.supported()
    if not ok:
        raise SystemExit(f"seccomp layer unavailable here: {why}")
    rules = _seccomp.candidate_filter()  # built once, as the warm worker does
    with tempfile.TemporaryFile() as exported:
        rules.export_bpf(exported)
        exported.seek(0)
        program = exported.read()
    rows = {
        "fork_only": _in_child(lambda: None, n),
        "candidate_load": _in_child(_seccomp.install, n),
        "candidate_raw_prctl": _in_child(_raw_loader(program), n),
        "slot_server_build_and_load": _in_child(lambda: (_seccomp.install(), _seccomp.install_slot_server()), n),
    }
    rows["slot_server_build_and_load"]["minus_candidate_load_us"] = (
        rows["slot_server_build_and_load"]["median_us"] - rows["candidate_load"]["median_us"])
    report = {"machine": {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]},
              "backend": _seccomp.describe(), "bpf_instructions": len(program) // 8, "children": n, "rows": rows}
    print(f"{report['backend']}; {report['bpf_instructions']} BPF instructions; {n} children; "
          f"{report['machine']['cpus']} CPUs at load {report['machine']['load_avg_1m']:.1f}")
    for name, row in rows.items():
        print(f"  {name:28s} median {row['median_us']:8.0f} us   p10 {row['p10_us']:8.0f} us")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "sandbox_seccomp.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote benchmarks/results/{path.name}")
    return report


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
