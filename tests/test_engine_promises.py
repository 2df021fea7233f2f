"""The plan does what its words say: every staging or extraction that the tips, warnings or the
data's reason mention is a step of the plan, and every step of the plan is said, for datasets of
every size and file count, given as a folder, an archive or shards, on every site profile. A tip
that tells the user to make an archive or shards first is followed, and the plan for what it makes
does what the tip said."""

import dataclasses
import re

import pytest

from guidance.engine import DataKind, JobSpec, Placement, Workload, recommend
from guidance.engine.types import Partition
from tests.engine_helpers import cluster

SITES = ("narval", "beluga", "cedar", "graham", "processing")
SIZES = [  # (GB, files): small, node-local, ImageNet-like above node-local, huge and sharded
    (5, 2_000),
    (50, 500_000),
    (60, 3),
    (200, 1_281_167),
    (500, 3),
    (900, 9_000_000),
]
PATHS = {  # what the user gives: nothing yet, a folder, an archive, shards
    "none": ("", None),
    "folder": ("$SCRATCH/imagenet", None),
    "archive": ("$SCRATCH/imagenet.tar", None),
    "shards": ("$SCRATCH/imagenet-shards", DataKind.SHARDS),
}
EXTRACTS = re.compile(r"\b(tar -x\w*|unzip)\b")
# How the notes speak of what the job does with the data on the node.
SAYS_EXTRACT = re.compile(r"\bextract", re.IGNORECASE)
SAYS_COPY_TO_NODE = re.compile(
    r"\b(copy|copies|copied|stage[sd]?)\b[^.:]*\b(to|on) (the node|node-local)", re.I
)
SAYS_STREAM = re.compile(r"\bas (a |one )?streams?\b", re.IGNORECASE)
COMMAND = re.compile(r"`([^`]+)`")


def _words(rec) -> str:
    return " ".join(n.message for n in (*rec.tips, *rec.warnings)) + " " + rec.storage.reason


def _steps(rec) -> str:
    return "\n".join(step.command for step in rec.storage.staging)


def _check(rec) -> None:
    words, steps, storage = _words(rec), _steps(rec), rec.storage
    assert bool(SAYS_EXTRACT.search(words)) == bool(EXTRACTS.search(steps)), (words, steps)
    assert bool(SAYS_COPY_TO_NODE.search(words)) == storage.staged, (words, steps)
    if SAYS_STREAM.search(words):  # read as a stream: archives or shards, never extracted
        assert storage.data_kind in (DataKind.ARCHIVE, DataKind.SHARDS), words
        assert not EXTRACTS.search(steps), steps


def _made_by(command: str) -> tuple[str, DataKind]:
    """What the tip's one-off command makes: its data path and kind."""
    if command.startswith("tar -cf "):
        return command.split()[2].replace('"', "").replace("'", ""), DataKind.ARCHIVE
    shards = re.match(r"mkdir -p (\S+) &&", command)
    assert shards, command
    return shards.group(1).replace('"', "").replace("'", ""), DataKind.SHARDS


def _cases():
    for slug in SITES:
        for gb, files in SIZES:
            for given in PATHS:
                for workload in (Workload.TRAINING, Workload.INFERENCE):
                    yield slug, gb, files, given, workload


@pytest.mark.parametrize(("slug", "gb", "files", "given", "workload"), list(_cases()))
def test_the_plan_takes_every_step_its_words_promise(slug, gb, files, given, workload):
    path, kind = PATHS[given]
    spec = JobSpec(workload, gb, 2.0, file_count=files, data_path=path, data_kind=kind)
    rec = recommend(spec, cluster(slug))
    assert rec.ok, rec.errors
    _check(rec)
    # A tip to make an archive or shards first: made, the plan does what the tip said.
    for note in rec.tips:
        for command in COMMAND.findall(note.message):
            made, made_kind = _made_by(command)
            followed = recommend(
                dataclasses.replace(spec, data_path=made, data_kind=made_kind), rec.cluster
            )
            _check(followed)
            assert followed.storage.data_kind == made_kind
            assert note.code not in {n.code for n in followed.tips}, "the same tip again"
            if made_kind == DataKind.ARCHIVE:  # "archive it": then the job extracts it
                assert EXTRACTS.search(_steps(followed)), followed.storage.staging


def test_many_small_files_above_node_local_stay_on_shared_storage_as_shards():
    """Narval, ImageNet as a folder: no staging promised, the shards' commands given."""
    spec = JobSpec(
        Workload.TRAINING, 200, 24.0, file_count=1_281_167, data_path="$PROJECT/imagenet"
    )
    rec = recommend(spec, cluster("narval"))
    assert rec.storage.placement == Placement.SHARED
    assert rec.storage.staging == ()
    [tip] = [n for n in rec.tips if n.code == "make_shards"]
    assert 'split -d -a 5 -l 32030 - "$PROJECT"/imagenet-shards/shard-' in tip.message
    assert "give $PROJECT/imagenet-shards as the data path, as a folder of shards" in tip.message
    assert "the job reads the folder in place" in rec.storage.reason
    assert "shards (tar files of about 5 GB, see the tip)" in rec.storage.reason


def test_a_node_type_with_enough_local_disk_stages_above_the_generic_limit():
    """An admin publishes 3,500 GB of node-local storage for Narval's A100 nodes: 200 GB of
    small files are extracted there, and the reason cites the node type's source."""
    narval = cluster("narval")
    roomy = dataclasses.replace(
        narval,
        partitions=tuple(dataclasses.replace(p, node_local_gb=3500) for p in narval.partitions),
    )
    spec = JobSpec(Workload.TRAINING, 200, 24.0, file_count=1_281_167, data_path="$PROJECT/in.tar")
    rec = recommend(spec, roomy)
    assert rec.storage.placement == Placement.NODE_LOCAL
    assert EXTRACTS.search(_steps(rec))
    assert "a100 nodes have 3500 GB of it" in rec.storage.reason
    assert rec.storage.source == roomy.partitions[0].source
    assert "training_from_network" not in {n.code for n in rec.warnings}
    _check(rec)
    # Too large even for that disk: shards on shared storage again.
    larger = recommend(dataclasses.replace(spec, dataset_gb=4000), roomy)
    assert larger.storage.placement == Placement.SHARED
    _check(larger)


def test_a_node_type_with_less_than_the_generic_limit_keeps_the_generic_limit():
    narval = cluster("narval")
    small = dataclasses.replace(
        narval,
        partitions=tuple(dataclasses.replace(p, node_local_gb=20) for p in narval.partitions),
    )
    rec = recommend(JobSpec(Workload.TRAINING, 50, 2.0), small)
    assert rec.storage.placement == Placement.NODE_LOCAL


def test_node_local_size_is_a_partition_field_left_unpublished_in_the_seed():
    assert all(p.node_local_gb is None for slug in SITES for p in cluster(slug).partitions)
    assert Partition("x", "a100", 1, 1, 1, 1.0).node_local_gb is None
