"""Per-user SSH key pairs, and the encryption that keeps their private halves safe at rest.

Each portal user gets an ed25519 key pair; they add the public half to ~/.ssh/authorized_keys on
the cluster (authorized_keys_line), and the portal stores the private half encrypted with Fernet
under PORTAL_ENCRYPTION_KEY. Pure Python but for reading that one setting.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

DEFAULT_COMMENT = "gpu-portal"
# One OpenSSH public key: type, base64 blob, optional comment, on one line. A newline in a comment
# would smuggle a second, unrestricted line into authorized_keys, so nothing outside this passes.
_PUBLIC_LINE = re.compile(r"(ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) [A-Za-z0-9+/]+=*")
_COMMENT = re.compile(r"[\w@.:+-]+(?: [\w@.:+-]+)*")
# An address, CIDR block or host name pattern for from="..." (sshd's wildcards * and ? allowed).
_FROM_PATTERN = re.compile(r"!?[A-Za-z0-9.:/*?_-]+")


@dataclass(frozen=True)
class KeyPair:
    private_pem: str = field(repr=False)  # "-----BEGIN OPENSSH PRIVATE KEY-----..."
    public_line: str  # "ssh-ed25519 AAAA... gpu-portal"


class DecryptionError(ValueError):
    """A stored secret cannot be decrypted with the configured key."""


def generate_keypair(comment: str = DEFAULT_COMMENT) -> KeyPair:
    if not _COMMENT.fullmatch(comment):
        raise ValueError(f"Key comment {comment!r} must be words of letters, digits and @.:+-_")
    return _pair(Ed25519PrivateKey.generate(), comment)


def pair_of(private_text: str, comment: str = DEFAULT_COMMENT) -> KeyPair:
    """The pair of an unencrypted private key a site handed an admin (OpenSSH or PEM text).
    Raises ValueError, whose message never quotes the key."""
    data = private_text.strip().encode() + b"\n"
    private = None
    for load in (serialization.load_ssh_private_key, serialization.load_pem_private_key):
        try:
            private = load(data, password=None)
            break
        except (ValueError, TypeError, UnsupportedAlgorithm):
            continue
    if private is None or not hasattr(private, "public_key"):
        raise ValueError("Not an unencrypted OpenSSH or PEM private key") from None
    return _pair(private, comment)


def _pair(private, comment: str) -> KeyPair:
    """The private key in OpenSSH form, and its public line as authorized_keys takes it."""
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return KeyPair(private_pem=pem, public_line=f"{public.decode()} {comment}")


# Where the portal's README installs its wrapper on an automation node; the login shell
# expands $HOME when sshd runs the forced command.
WRAPPER_COMMAND = "$HOME/bin/portal-remote"


def authorized_keys_line(
    public_line: str, *, from_hosts: Sequence[str] = (), command: str = ""
) -> str:
    """The line a user adds to ~/.ssh/authorized_keys on the cluster for the portal's key.

    `restrict` turns off port, agent and X11 forwarding, pseudo-terminals and ~/.ssh/rc, none of
    which the portal uses; running commands and the SFTP subsystem stay allowed, and those are
    all it needs. `from_hosts` (the portal's addresses, e.g. "203.0.113.7" or "10.1.0.0/16")
    limits where the key is accepted from. `command` makes the key run only that (an automation
    node's forced command, the portal's wrapper: WRAPPER_COMMAND), and no SFTP.
    """
    line = public_line.strip()
    key, _, comment = line.partition(" ")
    blob, _, comment = comment.partition(" ")
    key = f"{key} {blob}"
    if not _PUBLIC_LINE.fullmatch(key) or (comment and not _COMMENT.fullmatch(comment)):
        raise ValueError("Not a one-line OpenSSH public key (type, base64 and an optional comment)")
    options = "restrict"
    if from_hosts:
        for pattern in from_hosts:
            if not _FROM_PATTERN.fullmatch(pattern):
                raise ValueError(f"{pattern!r} is not an address, network or host pattern")
        options += f',from="{",".join(from_hosts)}"'
    if command:
        if '"' in command or "\n" in command:
            raise ValueError("A forced command cannot hold a double quote or a line break")
        options += f',command="{command}"'
    return f"{options} {line}"


def _fernet() -> Fernet:
    # Read at each use rather than at import, so that tests and key rotation see the current value.
    from django.conf import settings

    return Fernet(settings.PORTAL_ENCRYPTION_KEY)


def encrypt(text: str) -> str:
    return _fernet().encrypt(text.encode()).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeEncodeError):
        raise DecryptionError(
            "A stored secret could not be decrypted: it was encrypted under another "
            "PORTAL_ENCRYPTION_KEY, or it is damaged. Restore the key it was made with, or have "
            "the user generate a new SSH key pair."
        ) from None
