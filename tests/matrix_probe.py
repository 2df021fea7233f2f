"""The program the script matrix's jobs run (tests/test_script_matrix.py), on the cluster's Python.

It reads the data where the script put it ($DATA_PATH), writes what it found as JSON to the results
destination on shared storage (one file per node and chain part), leaves a result in $RESULTS_DIR
(node-local when the data was staged: it only arrives if the copy-back works) and, on the first
task, a checkpoint naming the one it resumed from. On several nodes every task first meets the
others through MASTER_ADDR and MASTER_PORT, as torch.distributed does, and every node writes the
same file name into $RESULTS_DIR and one of its own into $CHECKPOINT_DIR. On USR1 it saves and
exits, as a checkpointing program does. In a sweep it also writes run.json: its arguments, its
parameters as exported, and what its folders held when it started (nothing of another run's).
Standard library only: Python 3.8 and newer.
"""

import hashlib
import json
import os
import pathlib
import signal
import socket
import sys
import tarfile
import time

# The parameters the matrix's sweeps give, exported to each run.
SWEEP_PARAMETERS = ("lr", "seed", "fail")
# A model file each node writes when it will be cancelled: 48 MB takes rsync long enough here.
MODEL_BYTES = 48 << 20


def digest(path: pathlib.Path) -> tuple[str, int]:
    """sha256 over the relative names and contents of every file, in name order."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    sha = hashlib.sha256()
    for file in files:
        sha.update((file.name if file == path else str(file.relative_to(path))).encode())
        sha.update(file.read_bytes())
    return sha.hexdigest(), len(files)


def read_data(path: pathlib.Path) -> tuple[str, int]:
    """As a data loader reads it: a folder of tar shards, or one tar archive read in place, as
    streams of members (WebDataset-style); anything else file by file. The same digest as the
    folder the members came from."""
    if path.is_dir():
        shards = sorted(path.iterdir())
        if shards and all(shard.name.endswith(".tar") for shard in shards):
            return _members(shards)
    elif ".tar" in path.name:
        return _members([path])
    return digest(path)


def _members(archives: list) -> tuple[str, int]:
    found = {}
    for archive in archives:
        with tarfile.open(str(archive), "r|*") as stream:  # one pass, never seeking back
            for member in stream:
                if member.isfile():
                    name = member.name[2:] if member.name.startswith("./") else member.name
                    found[name] = stream.extractfile(member).read()
    sha = hashlib.sha256()
    for name in sorted(found, key=lambda name: pathlib.PurePosixPath(name).parts):
        sha.update(name.encode())
        sha.update(found[name])
    return sha.hexdigest(), len(found)


def probe_module() -> str:
    try:
        import portal_probe  # installed from the requirements file, when the case has one
    except ImportError:
        return ""
    return portal_probe.VALUE


def rendezvous(rank: int, world: int) -> dict:
    """Every rank connects to rank 0, which answers once all have come: what each learnt."""
    address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    node = os.environ.get("SLURMD_NODENAME", "")
    if rank == 0:
        with socket.create_server(("", address[1])) as server:
            server.settimeout(120)
            peers = [server.accept()[0] for _ in range(world - 1)]
            seen = {0: node}
            for peer in peers:
                said = json.loads(peer.makefile().readline())
                seen[said["rank"]] = said["node"]
            for peer in peers:
                peer.sendall((json.dumps(seen) + "\n").encode())
                peer.close()
        return seen
    deadline = time.monotonic() + 120
    while True:
        try:
            connection = socket.create_connection(address, timeout=120)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with connection:
        connection.sendall((json.dumps({"rank": rank, "node": node}) + "\n").encode())
        return json.loads(connection.makefile().readline())


def on_usr1(*_) -> None:
    """What a checkpointing program does before its time limit: save, and exit."""
    env = os.environ
    name = f"usr1-{env.get('SLURM_ARRAY_TASK_ID', '0')}-{env.get('SLURMD_NODENAME', '')}"
    (pathlib.Path(env["RESULTS_DEST"]) / name).write_text(str(time.time()))
    raise SystemExit(0)


def main() -> None:
    started = time.time()
    signal.signal(signal.SIGUSR1, on_usr1)
    env = os.environ
    # A chain's part: the array index, or in a sweep of chains the times its task was requeued.
    part = env.get("CHAIN_PART", env.get("SLURM_ARRAY_TASK_ID", "0"))
    node = env.get("SLURMD_NODENAME", "unknown")
    world = int(env.get("WORLD_SIZE", "1"))
    # The portal's per-node start sets NODE_RANK; the user's own srun gives each task its rank.
    rank = int(env.get("NODE_RANK", env.get("SLURM_PROCID", "0")))
    met = rendezvous(rank, world) if world > 1 else {}
    data = pathlib.Path(env["DATA_PATH"])
    sha, files = read_data(data)
    last = env.get("LAST_CHECKPOINT", "")
    found = {
        "started": started,
        "digest": sha,
        "files": files,
        "data_path": str(data),
        "stage_dir": env.get("STAGE_DIR", ""),
        "env_dir": env.get("ENV_DIR", ""),
        "slurm_tmpdir": env.get("SLURM_TMPDIR"),
        "probe_module": probe_module(),
        "resumed_from": pathlib.Path(last).read_text() if last else "",
        "last_checkpoint": last,
        "rank": rank,
        "met": met,
        "rendezvous": {name: env.get(name) for name in ("MASTER_ADDR", "NNODES", "WORLD_SIZE")},
    }
    results_dir = pathlib.Path(env["RESULTS_DIR"])
    if "RUN_NAME" in env:
        _sweep_run(env, results_dir)
    # A log every part adds to, on every node: each part's lines must come back.
    with (results_dir / "log.txt").open("a") as log:
        log.write(f"part {part}\n")
    if world > 1:  # the same name on every node: only what comes back apart survives
        if float(env.get("PROBE_SECONDS", "0")) > 0:
            # Saved under signals when cancelled: large enough that the copy is still running
            # when the second one comes, and named to be copied before node.txt.
            (results_dir / "model.bin").write_bytes(bytes(MODEL_BYTES))
        (results_dir / "node.txt").write_text(node)
        # In a folder of their own: a chain's next part resumes from the newest file beside.
        nodes = pathlib.Path(env["CHECKPOINT_DIR"]) / "nodes"
        nodes.mkdir(exist_ok=True)
        (nodes / f"node-{node}.txt").write_text(str(rank))
    if env.get("SLURM_PROCID", "0") == "0":
        (results_dir / f"result-{part}.txt").write_text(sha)
        checkpoint = pathlib.Path(env["CHECKPOINT_DIR"]) / f"part-{part}.ckpt"
        checkpoint.write_text(f"part {part}")
        # A later part holding an older copy of a result must not overwrite the newer one.
        shared = results_dir / "shared.txt"
        shared.write_text(f"from part {part}")
        if part == "2":
            os.utime(shared, (time.time() - 86400, time.time() - 86400))
    # Written last: the test takes it as the sign that the results above are in place.
    results_dest = pathlib.Path(env["RESULTS_DEST"])
    (results_dest / f"probe-{part}-{node}.json").write_text(json.dumps(found))
    # Cases that end otherwise: wait for a cancel or the time limit, or fail.
    if env.get("PROBE_WAIT_PART", part) == part:  # only that part waits, where one is named
        time.sleep(float(env.get("PROBE_SECONDS", "0")))
    raise SystemExit(int(env.get("PROBE_EXIT", "0")))


def _sweep_run(env, results_dir: pathlib.Path) -> None:
    checkpoints = pathlib.Path(env["CHECKPOINT_DIR"])
    before = sorted(p.name for p in checkpoints.iterdir())
    found = {
        "run": env["RUN_NUMBER"],
        "name": env["RUN_NAME"],
        "argv": sys.argv[1:],
        "parameters": {name: env[name] for name in SWEEP_PARAMETERS if name in env},
        "checkpoints_before": before,
        "results_before": sorted(p.name for p in results_dir.iterdir()),
        "results_dir": str(results_dir),
    }
    (pathlib.Path(env["RESULTS_DEST"]) / "run.json").write_text(json.dumps(found))
    # A run that fails once: it saves, then stops; run again, it finds its own save and goes on.
    if env.get("PROBE_FAIL_ONCE") == "yes" and "failed-once" not in before:
        (checkpoints / "failed-once").write_text(env["RUN_NAME"])
        raise SystemExit(3)


if __name__ == "__main__":
    main()
