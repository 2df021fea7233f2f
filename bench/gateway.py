"""Latency of the cluster gateway against a real sshd on 127.0.0.1, with and without TCP_NODELAY.

Starts its own sshd the way the tests do (tests/sshd.py; installs openssh-server with apt when
root and missing) and prints the median and p95 of: connect + key authentication, `true` on a
pooled connection, and a 10 kB SFTP write on a pooled connection.
Usage: .venv/bin/python bench/gateway.py [runs]   (default 50)
"""

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
ROOT = Path(__file__).resolve().parent.parent


def measure(runs: int, action: Callable[[], object], before: Callable[[], object] = lambda: None):
    for _ in range(3):  # warm up: imports, caches, the server's first forks
        before()
        action()
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(0.95 * runs) - 1)]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from jobs.cluster.gateway import Gateway
    from tests.sshd import Sshd, install_sshd

    reason = install_sshd()
    if reason is not None:
        sys.exit(reason)
    with tempfile.TemporaryDirectory(prefix="bench-sshd-") as folder:
        sshd = Sshd.create(Path(folder))
        sshd.start()
        try:
            login = sshd.login()
            data = bytes(range(256)) * 40  # 10,240 bytes
            target = str(Path(folder) / "bench.bin")
            print(f"{RUNS} runs each, paramiko to OpenSSH on 127.0.0.1; medians (p95) in ms")
            print(f"{'':28s} {'TCP_NODELAY':>16s} {'without':>16s}")
            rows: dict[str, list[str]] = {}
            for nodelay in (True, False):
                # Limits given: outside Django, no settings to take them from.
                gateway = Gateway(nodelay=nodelay, max_open=4, idle_seconds=600)
                figures = {
                    "connect + key auth": measure(
                        RUNS, lambda g=gateway: g.connect(login), before=gateway.close_all
                    ),
                    "`true`, pooled": measure(RUNS, lambda g=gateway: g.run(login, ["true"])),
                    "10 kB SFTP write, pooled": measure(
                        RUNS, lambda g=gateway: g.write_file(login, target, data)
                    ),
                }
                gateway.close_all()
                for name, (median, p95) in figures.items():
                    rows.setdefault(name, []).append(f"{median:6.1f} ({p95:6.1f})")
            for name, cells in rows.items():
                print(f"{name:28s} {cells[0]:>16s} {cells[1]:>16s}")
        finally:
            sshd.stop()


if __name__ == "__main__":
    main()
