"""Registers the local Slurm cluster (docker/devcluster) as the cluster "local", and gives portal
users a login on it: a key the portal makes, added to the lab user's authorized_keys, and to the
automation node's keys with the constraints such a node sets (restrict, from=, the wrapper).
With --reader, also its cluster-wide reader: the read-only service login portalreader, with a key
the portal makes, added to that user's authorized_keys. With --second, the same for the second,
differently shaped dev cluster (`devcluster up --second`), as the cluster "local-b"."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from guidance.models import Cluster, JobEnvironment, Policy, StorageTier
from jobs.cluster import keys
from jobs.cluster.errors import ClusterError
from jobs.cluster.importer import import_partitions
from jobs.cluster.remote import host_key, login_for
from jobs.management.commands.seed_templates import link_seeded_templates
from jobs.models import ClusterAccount, ClusterReader

SCRIPT = Path(settings.BASE_DIR) / "docker" / "devcluster" / "devcluster"


@dataclass(frozen=True)
class Registration:
    """One of the dev clusters as the portal publishes it."""

    slug: str
    name: str
    which: tuple[str, ...]  # what picks it on the script's command line
    description: str
    cpus_per_gpu: int
    memory_per_gpu_mb: int


FIRST = Registration(
    slug="local",
    name="Local dev cluster",
    which=(),
    description="The portal's own Slurm cluster on this machine (docker/devcluster): three "
    "nodes with fake typed GPUs, two partitions, accounting, and an sshd on 127.0.0.1. Jobs "
    "really run here.",
    # 4 CPUs and 8000 MB for 2 GPUs on each node.
    cpus_per_gpu=2,
    memory_per_gpu_mb=2000,
)
SECOND = Registration(
    slug="local-b",
    name="Second dev cluster",
    which=("--second",),
    description="A second Slurm cluster on this machine, shaped otherwise (docker/devcluster "
    "up --second): a node of four H100 and one of two L40S, each its own partition with longer "
    "limits, its own accounting and an sshd on 127.0.0.1. Jobs really run here.",
    # Both nodes have 2 CPUs and 4000 MB a GPU: all the CPUs, most of the memory.
    cpus_per_gpu=2,
    memory_per_gpu_mb=3000,
)


def devcluster_env(which: tuple[str, ...] = ()) -> dict[str, str]:
    result = subprocess.run(
        [str(SCRIPT), "env", *which], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CommandError(f"The local cluster is not up: {result.stderr.strip()}")
    pairs = (line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    return {key: value.strip().strip("'\"") for key, value in pairs}


class Command(BaseCommand):
    help = "Register the local Slurm cluster as 'local' and give users a login on it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("usernames", nargs="*", help="Portal users (default: superusers).")
        parser.add_argument(
            "--reader",
            action="store_true",
            help="Also read every login's jobs through the cluster's read-only service login.",
        )
        parser.add_argument(
            "--second",
            action="store_true",
            help="The second dev cluster (devcluster up --second), as 'local-b'.",
        )

    def handle(
        self, *args, usernames: list[str], reader: bool = False, second: bool = False, **options
    ) -> None:
        site = SECOND if second else FIRST
        env = devcluster_env(site.which)
        host, port = env["DEVCLUSTER_HOST"], int(env["DEVCLUSTER_PORT"])
        try:
            presented = host_key(host, port)
        except ClusterError as error:
            raise CommandError(error.message) from None
        if presented.line.split()[:2] != env["DEVCLUSTER_HOST_KEY"].split()[:2]:
            raise CommandError("The sshd on the local cluster presents another host key.")
        cluster, _ = Cluster.objects.update_or_create(
            slug=site.slug,
            defaults={
                "name": site.name,
                "scheduler": "slurm",
                "login_host": host,
                "login_port": port,
                "host_key": presented.line,
                "host_key_fingerprint": presented.fingerprint,
                "automation_port": int(env.get("DEVCLUSTER_AUTOMATION_PORT") or 0) or None,
                "description": site.description,
            },
        )
        self._guidance(cluster, site)
        link_seeded_templates(cluster)
        users = get_user_model().objects.filter(
            **({"username__in": usernames} if usernames else {"is_superuser": True})
        )
        accounts = [self._account(user, cluster, env) for user in users]
        if accounts:
            imported = import_partitions(cluster, login_for(accounts[0]))
            names = ", ".join(p.name for p in imported)
            self.stdout.write(f"Cluster '{site.slug}': partitions {names}.")
        for account in accounts:
            self.stdout.write(f"{account.owner} logs in as {account}.")
        if reader:
            self.stdout.write(f"Jobs are read through {self._reader(cluster, env)}.")

    def _guidance(self, cluster: Cluster, site: Registration) -> None:
        Policy.objects.get_or_create(
            cluster=cluster,
            # Results in the test user's home, which has no quota here.
            defaults={
                "cpus_per_gpu": site.cpus_per_gpu,
                "memory_per_gpu_mb": site.memory_per_gpu_mb,
                "results_dir": "$HOME/results",
                "note": site.description,
            },
        )
        # A plain Slurm site: each node's own /localscratch, shared by the jobs on the node (the
        # job makes its folder there and removes it); no per-job directory, no modules.
        StorageTier.objects.update_or_create(
            cluster=cluster,
            kind="node_local",
            defaults={
                "name": "Node-local /localscratch",
                "path": "/localscratch",
                "persistent": False,
                "per_job": False,
            },
        )
        StorageTier.objects.get_or_create(
            cluster=cluster,
            name="Home",
            defaults={"kind": "home", "path": "$HOME", "persistent": True},
        )
        JobEnvironment.objects.get_or_create(
            cluster=cluster, defaults={"python_builder": "venv", "note": site.description}
        )

    def _account(self, user, cluster: Cluster, env: dict[str, str]) -> ClusterAccount:
        account = ClusterAccount.objects.login_of(user, cluster)
        if account is None:
            pair = keys.generate_keypair()
            account = ClusterAccount.objects.create(
                owner=user,
                cluster=cluster,
                username=env["DEVCLUSTER_USER"],
                public_key=pair.public_line,
                private_key_encrypted=keys.encrypt(pair.private_pem),
            )
        authorized = Path(f"~{env['DEVCLUSTER_USER']}").expanduser() / ".ssh" / "authorized_keys"
        line = keys.authorized_keys_line(account.public_key)
        if line not in authorized.read_text():
            with authorized.open("a") as out:
                out.write(line + "\n")
        automation = Path(env.get("DEVCLUSTER_AUTOMATION_KEYS", ""))
        if automation.name and automation.is_file():
            forced = keys.authorized_keys_line(
                account.public_key, from_hosts=["127.0.0.1"], command=keys.WRAPPER_COMMAND
            )
            if forced not in automation.read_text():
                with automation.open("a") as out:
                    out.write(forced + "\n")
        return account

    def _reader(self, cluster: Cluster, env: dict[str, str]) -> ClusterReader:
        name = env.get("DEVCLUSTER_READER")
        if not name:
            raise CommandError("This dev cluster has no service login: run devcluster up again.")
        reader = ClusterReader.objects.filter(cluster=cluster).first()
        if reader is None or reader.username != name:
            pair = keys.generate_keypair(comment="gpu-portal-reader")
            reader, _ = ClusterReader.objects.update_or_create(
                cluster=cluster,
                defaults={
                    "username": name,
                    "public_key": pair.public_line,
                    "private_key_encrypted": keys.encrypt(pair.private_pem),
                },
            )
        reader.enabled = True
        reader.save(update_fields=["enabled"])
        authorized = Path(f"~{name}").expanduser() / ".ssh" / "authorized_keys"
        line = keys.authorized_keys_line(reader.public_key)
        if line not in authorized.read_text():
            with authorized.open("a") as out:
                out.write(line + "\n")
        return reader
