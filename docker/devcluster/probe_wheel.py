"""Writes portal_probe-1.0-py3-none-any.whl into the directory given: a tiny pure-Python wheel for
the lab's wheelhouse, so that `pip install --no-index portal_probe` can be tried without a network.

    python3 probe_wheel.py DIR
"""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME, VERSION = "portal_probe", "1.0"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
FILES = {
    f"{NAME}/__init__.py": 'VALUE = "portal-probe-ok"\n',
    f"{DIST_INFO}/METADATA": (
        f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
        "Summary: A probe wheel of the portal's dev cluster wheelhouse\n"
    ),
    f"{DIST_INFO}/WHEEL": (
        "Wheel-Version: 1.0\nGenerator: devcluster\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ),
}


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def write_wheel(directory: Path) -> Path:
    wheel = directory / f"{NAME}-{VERSION}-py3-none-any.whl"
    partial = wheel.with_suffix(".partial")
    record = ""
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in FILES.items():
            data = text.encode()
            archive.writestr(path, data)
            record += record_line(path, data)
        # RECORD lists itself without a hash.
        archive.writestr(f"{DIST_INFO}/RECORD", record + f"{DIST_INFO}/RECORD,,\n")
    partial.chmod(0o644)
    partial.replace(wheel)
    return wheel


if __name__ == "__main__":
    print(write_wheel(Path(sys.argv[1])))
