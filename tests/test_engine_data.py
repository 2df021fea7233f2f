"""What a data path names, and the one-off archive command: pure tables, no database."""

import pytest

from guidance.engine import DataKind
from guidance.engine.data import archive_command, kind_from_name


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("$PROJECT/imagenet", DataKind.FOLDER),
        ("$PROJECT/imagenet/", DataKind.FOLDER),
        ("/data/v1.2/images", DataKind.FOLDER),  # a dot in a parent folder says nothing
        ("/data/imagenet.v2", DataKind.FOLDER),  # nor a version in the folder's own name
        ("/data/coco-2017.1", DataKind.FOLDER),
        ("~/data/train.tar", DataKind.ARCHIVE),
        ("~/data/train.tar.gz", DataKind.ARCHIVE),
        ("~/data/train.TGZ", DataKind.ARCHIVE),
        ("~/data/train.tar.zst", DataKind.ARCHIVE),
        ("~/data/train.zip", DataKind.ARCHIVE),
        ("~/data/weights.h5", DataKind.FILE),
        ("~/data/.hidden", DataKind.FOLDER),
    ],
)
def test_the_kind_is_taken_from_the_name(path, kind):
    assert kind_from_name(path) == kind


def test_the_archive_advice_is_a_command_that_keeps_the_folders_layout():
    assert (
        archive_command("$SCRATCH/my data/")
        == "tar -cf \"$SCRATCH\"'/my data.tar' -C \"$SCRATCH\"'/my data' ."
    )
