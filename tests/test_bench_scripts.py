# Every script under bench/ runs once with a tiny size, so that none can stop working unnoticed:
# it must exit 0 and print the figures it is there to print. At these sizes the figures mean
# nothing; the full-size runs (the defaults) are the measurements. bench/cluster_setup.py is run
# by the cluster scripts, and bench/locustfile.py by bench/load.py.

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.processes import REPO, portal_env
from tests.services import service_missing
from tests.sshd import install_sshd

NUMBER = r"-?\d+(?:\.\d+)?"


def run_bench(tmp_path: Path, script: str, *args: str, timeout: float = 120) -> str:
    # portal_env: a developer's DATABASE_URL or BENCH_DATABASE_URL must not reach the scripts.
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, f"bench/{script}", *args],
        cwd=REPO,
        env=portal_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    print(f"bench/{script} {' '.join(args)}: {time.monotonic() - start:.1f} s\n{result.stdout}")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


def lines_matching(pattern: str, output: str) -> list[str]:
    return re.findall(rf"^{pattern}", output, re.MULTILINE)


def test_compose_prints_percentiles_of_each_request(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "compose.py", "5")
    for name in ("composer live update (htmx)", "composer full page", "advice live update (htmx)"):
        figures = rf"n=5 +median +{NUMBER} ms +p95 +{NUMBER} ms +p99 +{NUMBER} ms"
        assert lines_matching(rf"{re.escape(name)} +{figures}", out), name


def test_where_prints_the_ranking_against_the_slowest_answer(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "where.py", "2", "0.2", "1")
    line = rf"run 1: slowest single answer {NUMBER} s +whole ranking {NUMBER} s +ratio ({NUMBER})"
    [ratio] = re.findall(rf"^{line}", out, re.MULTILINE)
    assert float(ratio) < 3  # at once, not one after the other


def test_where_on_the_real_clusters_prints_the_ranking_against_the_slowest_answer(
    tmp_path: Path, devcluster, second_devcluster
) -> None:
    out = run_bench(tmp_path, "where.py", "--real", "1")
    assert "4 logins on two clusters (local, local-again, local-b, local-b-again)" in out
    for how in ("open connections", "new connections"):
        line = rf"{how}, run 1: each --test-only alone( \d+){{4}} ms, slowest {NUMBER} s +whole"
        assert lines_matching(line, out), how
        assert lines_matching(rf"{how}: median ratio {NUMBER} over 1 runs", out), how


def test_code_check_prints_its_times_and_the_parsers_share(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "code_check.py", "2", "200")
    assert lines_matching(r"program +\d+ lines", out)
    for label in ("check_code median", "check_code worst"):
        assert lines_matching(rf"{label} +{NUMBER} ms$", out), label
    assert lines_matching(rf"ast\.parse median +{NUMBER} ms \(\d+% of a check\)", out)
    assert lines_matching(r"by rule +.*dataloader_num_workers \d+", out)


def test_sampler_cpu_prints_the_cpu_per_gpu_and_hour(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "sampler_cpu.py", "2", "0.2", "2")
    [lines] = re.findall(r"(\d+) sample lines", out)
    assert int(lines) > 0
    assert re.search(rf"{NUMBER} ms of CPU per round of 2 GPUs", out)
    assert len(re.findall(rf"{NUMBER} CPU s per GPU per hour", out)) == 2


def test_script_check_corpus_prints_each_script_and_the_totals(tmp_path: Path) -> None:
    out = run_bench(tmp_path, "script_check_corpus.py", "2")
    assert len(lines_matching(r"\d\d-[a-z]+-[\w-]+\.sh +[a-z]+ +\d+/\d+ ", out)) >= 45
    counts = ("scripts", "sound scripts", "expected findings", "hits")
    for total in (*counts, "sound scripts with any finding"):
        assert lines_matching(rf"{total} +\d+$", out), total
    assert lines_matching(rf"misses +\d+ \(catch rate {NUMBER}%\)$", out)
    assert lines_matching(r"findings raised +\d+ ", out)
    assert lines_matching(rf"false alarms +\d+ \(({NUMBER}%|-) of findings raised\)$", out)
    assert lines_matching(rf"time per check +median {NUMBER} µs \(n=\d+\)$", out)


@pytest.mark.service
def test_gateway_prints_medians_with_and_without_nodelay(tmp_path: Path) -> None:
    reason = install_sshd()
    if reason is not None:
        service_missing(reason)
    out = run_bench(tmp_path, "gateway.py", "3")
    cell = rf"{NUMBER} \( *{NUMBER}\)"
    for name in ("connect + key auth", "`true`, pooled", "10 kB SFTP write, pooled"):
        assert lines_matching(rf"{re.escape(name)} +{cell} +{cell}$", out), name


def test_poll_prints_one_cycle_per_size(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "poll.py", "2", "5")
    cycle = rf" *\d+ active jobs: one poll cycle +{NUMBER} ms, \d+ SSH commands"
    assert len(lines_matching(cycle, out)) == 2


def test_automation_node_prints_each_figure_both_ways(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "automation_node.py", "3", "2", "1")
    both = rf"login node +{NUMBER} ms, +\d+ commands; automation node +{NUMBER} ms, +\d+ commands"
    for what in ("poll cycle", "submission", "read of 2 sample files"):
        assert lines_matching(rf"{what} +{both}; ratio {NUMBER}", out), what


def test_samples_prints_each_collection(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "samples.py", "3")
    collected = rf"[a-z0-9 ()]+? +{NUMBER} ms, 3 files, +{NUMBER} kB read, +(\d+) samples stored"
    # New data, nothing new, new data on top of stored rows, nothing new: 3 files of 60 lines.
    assert lines_matching(collected, out) == ["180", "0", "180", "0"]


def test_submit_prints_both_medians_and_their_ratio(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "submit.py", "2")
    medians = rf"bare paramiko sbatch: median {NUMBER} ms; portal submission: median {NUMBER} ms"
    for label in ("no GPUs", "a GPU job"):
        assert lines_matching(rf"{label}: {medians}; ratio {NUMBER} \(n=2\)$", out), label


def test_submit_walk_prints_the_modules_entered(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "submit_walk.py")
    assert lines_matching(r"jobs\.tasks -> .*jobs\.slurm\.sbatch", out)
    assert lines_matching(r"\d+ module entries, \d+ modules$", out)


@pytest.mark.service
def test_load_prints_percentiles_and_queries_of_each_page(tmp_path: Path) -> None:
    # load.py starts gunicorn and Celery itself, on PostgreSQL (through psql) and Redis.
    postgres = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-U", "postgres", "-Atc", "select 1"],
        capture_output=True,
        text=True,
        check=False,
    )
    if postgres.returncode != 0:
        service_missing(f"PostgreSQL is not reachable with psql: {postgres.stderr.strip()}")
    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/12", socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        service_missing(f"Redis is not reachable at 127.0.0.1:6379: {exc}")
    # 14 s of Locust in all (with the logins and its margin): enough for every page to be asked
    # for at least once, but for a chance of about 1 in 30,000.
    out = run_bench(
        tmp_path, "load.py", "--users", "3", "--seconds", "8", "--jobs", "20", "--active", "2",
        timeout=300,
    )  # fmt: skip
    pages = ("job list", "job list, live rows", "job page", "job page, live status", "live advice")
    for page in pages:
        row = rf"{re.escape(page)} +\d+ +0 +{NUMBER} +\d+ +\d+ +\d+$"  # 0: no errors
        assert lines_matching(row, out), page
        assert lines_matching(rf"{re.escape(page)} +200 \d+ queries$", out), page
    assert lines_matching(r"Aggregated +\d+ +0 ", out)


def test_poll_login_prints_the_poll_against_its_bare_commands(tmp_path: Path, devcluster) -> None:
    out = run_bench(tmp_path, "poll_login.py", "2")
    works = ("bare squeue \\+ sacct", "the two over SSH", "one login's warm poll")
    works += ("one login's cold poll",)
    for what in works:
        cpu = rf"CPU +{NUMBER} / +{NUMBER} ms"
        assert lines_matching(rf" +{what} +{NUMBER} ms +\({NUMBER}x bare\) +{cpu}$", out), what
    assert lines_matching(rf" +the portal's own part of a poll +{NUMBER} ms$", out)


@pytest.mark.service
def test_poll_scale_prints_each_figure(tmp_path: Path, devcluster) -> None:
    # Its own database (createdb), redis-server, beat and four workers: about 70 s.
    if subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1"], check=False).returncode != 0:
        service_missing("PostgreSQL is not reachable on 127.0.0.1:5432")
    out = run_bench(tmp_path, "poll_scale.py", "--logins", "10", "--minutes", "0.5", timeout=300)
    assert lines_matching(rf" +every login polled once +{NUMBER} s after beat's first", out)
    # A daemon restarted meanwhile (a fault test beside this one) has no count to give.
    count = rf"(?:{NUMBER}|- \(restarted meanwhile\))"
    rpcs = rf" +Slurm RPCs per poll cycle: slurmctld +{count}, slurmdbd +{count} "
    assert lines_matching(rpcs, out)
    assert lines_matching(r" +logins polled per poll period, every 5 s: \[[\d, ]+\]$", out)
    for queue in ("poll", "celery"):
        assert lines_matching(rf" +{queue} queue every 5 s: \[[\d, ]+\]$", out), queue
    most = r" +SSH connections per worker process: most \d+, all processes together most \d+$"
    assert lines_matching(most, out)
    shown = rf" +a cancel shown after +{NUMBER} s unwatched, +{NUMBER} s on its page while watched"
    assert lines_matching(shown, out)
    assert lines_matching(rf" +load average {NUMBER} {NUMBER} {NUMBER} at the end", out)
    # Nothing of the run is left: its jobs, Unix users and database are named after its pid.
    [pid] = re.findall(r"database bench_poll_scale_(\d+)$", out, re.MULTILINE)
    queued = devcluster.as_operator("squeue", "--all", "--noheader", "--format=%j|%T")
    assert not [row for row in queued.split() if row == f"pollscale-{pid}|PENDING"]
    users = subprocess.run(["getent", "passwd"], capture_output=True, text=True).stdout
    assert f"pscale{pid}u" not in users
    associations = devcluster.as_operator("sacctmgr", "-n", "-P", "list", "user", "format=user")
    assert f"pscale{pid}u" not in associations
    sql = "SELECT datname FROM pg_database"
    databases = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-Atc", sql]
    listed = subprocess.run(databases, capture_output=True, text=True, check=True).stdout
    assert f"bench_poll_scale_{pid}" not in listed.split()
