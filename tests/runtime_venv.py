"""A virtualenv made from requirements.txt alone, by the command docker/Dockerfile installs the
image's packages with. Built once for each set of what goes into it (Python, that command, the
files it reads) and kept under ~/.cache, so that CI and developers pay the ~15 s install once per
machine rather than once per run."""

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.processes import REPO

DOCKERFILE = REPO / "docker" / "Dockerfile"
# What the install command reads: a change to either builds a new venv.
INSTALL_INPUTS = [REPO / "requirements.txt", REPO / "scripts" / "install-runtime"]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-portal"


def dockerfile_install_command() -> str:
    """The Dockerfile's one RUN instruction that installs Python packages, as written there; a
    second would give the image packages that this venv lacks."""
    # Continued lines joined, as Docker reads them.
    instructions = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text()).splitlines()
    installs = [
        line.removeprefix("RUN ").strip()
        for line in instructions
        if line.startswith("RUN ") and ("pip" in line or "install-runtime" in line)
    ]
    assert len(installs) == 1, f"docker/Dockerfile should install packages once: {installs}"
    return installs[0]


def runtime_venv() -> Path:
    """The venv, built first if this machine has none for the current inputs. A lock lets
    concurrent test runs share it; a stamp written last tells a finished venv from one whose
    build was cut short."""
    command = dockerfile_install_command()
    key = hashlib.sha256(
        b"\0".join(
            [sys.version.encode(), command.encode(), *(p.read_bytes() for p in INSTALL_INPUTS)]
        )
    ).hexdigest()[:16]
    root = CACHE / "runtime-venvs"
    root.mkdir(parents=True, exist_ok=True)
    venv = root / key
    with (root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            # sys.executable is the dev venv's python: venv builds on the interpreter under it.
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            result = subprocess.run(
                ["sh", "-c", command],
                cwd=REPO,
                env=install_env(venv),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"
            (venv / ".complete").touch()
    return venv


def install_env(venv: Path) -> dict[str, str]:
    # pip keeps this machine's index settings (PIP_*); nothing else of the dev venv may leak in.
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    return env | {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
