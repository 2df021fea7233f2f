import subprocess
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from jobs.cluster.gateway import Gateway
from jobs.cluster.keys import (
    DecryptionError,
    authorized_keys_line,
    decrypt,
    encrypt,
    generate_keypair,
)
from tests.processes import portal_env, python
from tests.sshd import Sshd, running_sshd_fixture, sshd_fixture  # noqa: F401

SETUP = "import django; django.setup(); from django.conf import settings; "
GENERATE = "Fernet.generate_key().decode()"


def test_it_generates_an_openssh_ed25519_pair(tmp_path: Path) -> None:
    pair = generate_keypair()
    assert pair.private_pem.startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert pair.public_line.startswith("ssh-ed25519 AAAA")
    assert pair.public_line.endswith(" gpu-portal")
    assert "PRIVATE" not in repr(pair)
    # OpenSSH itself reads the private key and derives the same public key from it.
    (tmp_path / "key").write_text(pair.private_pem)
    (tmp_path / "key").chmod(0o600)
    derived = subprocess.run(
        ["ssh-keygen", "-y", "-f", tmp_path / "key"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert derived[:2] == pair.public_line.split()[:2]


def test_every_pair_is_new() -> None:
    assert generate_keypair().public_line != generate_keypair().public_line


def test_the_pair_logs_in_to_a_real_sshd(running_sshd: Sshd) -> None:
    pair = generate_keypair(comment="alice@gpu-portal")
    running_sshd.authorize(pair.public_line)
    gateway = Gateway()
    try:
        login = running_sshd.login(private_key=pair.private_pem)
        assert gateway.run(login, ["echo", "hello"]).stdout == "hello\n"
        # restrict still allows what the portal needs: SFTP as well as commands.
        gateway.write_file(login, str(running_sshd.folder / "from-new-key.txt"), b"sftp works")
    finally:
        gateway.close_all()
    assert (running_sshd.folder / "from-new-key.txt").read_bytes() == b"sftp works"


def test_the_authorized_keys_line_is_restricted() -> None:
    public = generate_keypair().public_line
    assert authorized_keys_line(public) == f"restrict {public}"


def test_the_authorized_keys_line_can_limit_source_addresses() -> None:
    public = generate_keypair().public_line
    line = authorized_keys_line(public, from_hosts=["203.0.113.7", "10.1.0.0/16"])
    assert line == f'restrict,from="203.0.113.7,10.1.0.0/16" {public}'


@pytest.mark.parametrize(
    "public_line",
    [
        "ssh-ed25519 AAAA gpu-portal\nssh-ed25519 AAAA unrestricted",
        'command="sh" ssh-ed25519 AAAA',
        "ssh-dss AAAA",
        "ssh-ed25519",
        "",
    ],
)
def test_the_authorized_keys_line_refuses_anything_but_one_key(public_line: str) -> None:
    with pytest.raises(ValueError, match="one-line OpenSSH public key"):
        authorized_keys_line(public_line)


def test_the_authorized_keys_line_refuses_odd_source_patterns() -> None:
    public = generate_keypair().public_line
    with pytest.raises(ValueError, match="not an address"):
        authorized_keys_line(public, from_hosts=['1.2.3.4" command="sh'])


def test_it_refuses_a_comment_that_would_break_the_line() -> None:
    with pytest.raises(ValueError, match="comment"):
        generate_keypair(comment="x\ny")


def test_encryption_round_trips(settings) -> None:
    settings.PORTAL_ENCRYPTION_KEY = Fernet.generate_key().decode()
    pem = generate_keypair().private_pem + "ünïcödé"
    token = encrypt(pem)
    assert "PRIVATE" not in token
    assert token != encrypt(pem)  # a fresh IV each time
    assert decrypt(token) == pem


def test_decrypting_with_another_key_fails_clearly(settings) -> None:
    settings.PORTAL_ENCRYPTION_KEY = Fernet.generate_key().decode()
    token = encrypt("secret")
    settings.PORTAL_ENCRYPTION_KEY = Fernet.generate_key().decode()
    with pytest.raises(DecryptionError, match="another PORTAL_ENCRYPTION_KEY"):
        decrypt(token)


@pytest.mark.parametrize("token", ["", "not a token", "gAAAAA" + "x" * 80, "ünï"])
def test_decrypting_a_damaged_value_fails_clearly(settings, token: str) -> None:
    settings.PORTAL_ENCRYPTION_KEY = Fernet.generate_key().decode()
    with pytest.raises(DecryptionError, match="damaged"):
        decrypt(token)


def test_development_derives_the_key_from_secret_key(tmp_path: Path) -> None:
    code = SETUP + "print(settings.PORTAL_ENCRYPTION_KEY)"
    first = python(portal_env(tmp_path, SECRET_KEY="a" * 50), code)
    again = python(portal_env(tmp_path, SECRET_KEY="a" * 50), code)
    other = python(portal_env(tmp_path, SECRET_KEY="b" * 50), code)
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout != other.stdout
    Fernet(first.stdout.strip())  # a valid key


def test_production_requires_the_key_and_says_how_to_make_one(tmp_path: Path) -> None:
    env = portal_env(tmp_path, DEBUG="false", SECRET_KEY="s" * 50)
    done = python(env, SETUP + "print(settings.PORTAL_ENCRYPTION_KEY)")
    assert done.returncode != 0
    assert "PORTAL_ENCRYPTION_KEY is not set" in done.stderr
    assert GENERATE in done.stderr


def test_production_uses_the_configured_key(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    env = portal_env(tmp_path, DEBUG="false", SECRET_KEY="s" * 50, PORTAL_ENCRYPTION_KEY=key)
    done = python(env, SETUP + "print(settings.PORTAL_ENCRYPTION_KEY)")
    assert done.stdout.strip() == key, done.stderr


@pytest.mark.parametrize("value", ["too-short", "a" * 44, "!" * 44])
def test_a_malformed_key_stops_the_settings(tmp_path: Path, value: str) -> None:
    done = python(portal_env(tmp_path, PORTAL_ENCRYPTION_KEY=value), SETUP)
    assert done.returncode != 0
    assert "PORTAL_ENCRYPTION_KEY must be a Fernet key" in done.stderr
    assert GENERATE in done.stderr
