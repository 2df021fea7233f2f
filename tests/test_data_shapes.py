"""Every data shape the engine knows (guidance/engine/archives.py) is named, staged and tested
everywhere the portal speaks of them; what is generated is checked here all the same, so that
words written by hand again fail.
"""

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from guidance.engine import DataKind
from guidance.engine.archives import ARCHIVE_FORMATS, ARCHIVE_SUFFIXES
from guidance.engine.data import kind_from_name
from guidance.engine.script_check.commands import STAGING_TOOLS
from jobs.compose.forms import ComposeForm
from portal.api_schemas import ScriptIn
from tests import test_script_matrix as matrix
from tests.engine_helpers import advise
from tests.services import service_missing

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The Debian package of each program the portal's staging runs, where the names differ.
DEBIAN_PACKAGES = {"xz": "xz-utils"}


def _suffixes_named(text: str) -> set[str]:
    """The file suffixes a text names: ".tar.gz" and ".tgz" in "(.tar.gz/.tgz)", not ".py" in
    "archives.py"."""
    return set(re.findall(r"(?<![\w.])\.[a-z0-9]+(?:\.[a-z0-9]+)*", text))


def test_the_archive_label_names_every_archive():
    assert _suffixes_named(DataKind.ARCHIVE.label) == set(ARCHIVE_SUFFIXES)


@pytest.mark.django_db  # the form offers the first cluster's lists and results directory
def test_the_composers_help_and_choices_name_every_archive():
    form = ComposeForm()
    assert _suffixes_named(form.fields["data_path"].help_text) == set(ARCHIVE_SUFFIXES)
    archive_choice = dict(form.fields["data_kind"].choices)[DataKind.ARCHIVE.value]
    assert _suffixes_named(archive_choice) == set(ARCHIVE_SUFFIXES)


def test_the_api_schema_names_every_archive():
    fields = ScriptIn.model_json_schema()["properties"]
    assert _suffixes_named(fields["data_path"]["description"]) == set(ARCHIVE_SUFFIXES)


@pytest.mark.parametrize("archive", ARCHIVE_FORMATS, ids=lambda archive: archive.suffixes[0])
def test_the_script_checker_knows_what_unpacks_every_archive(archive):
    assert archive.unpackers <= STAGING_TOOLS


def _dev_cluster_job_packages() -> set[str]:
    text = (ROOT / "docker" / "devcluster" / "devcluster").read_text()
    [packages] = re.findall(r"^JOB_PACKAGES=\((.*)\)$", text, re.MULTILINE)
    return set(packages.split())


@pytest.mark.parametrize("archive", ARCHIVE_FORMATS, ids=lambda archive: archive.suffixes[0])
def test_the_dev_clusters_nodes_have_what_unpacks_every_archive(archive):
    packages = {DEBIAN_PACKAGES.get(program, program) for program in archive.node_programs}
    assert packages <= _dev_cluster_job_packages()


def test_the_script_matrix_stages_every_shape_on_every_site_profile():
    staged = {
        (matrix.SITES[case.site].partition, case.shape)
        for case in matrix.CASES
        if case.placement != "shared" and case.ending == "ok"
    }
    for profile in {site.partition for site in matrix.SITES.values()}:
        shapes = {shape for partition, shape in staged if partition == profile}
        names = {matrix.SHAPES[shape][0] for shape in shapes}
        kinds = {
            DataKind(matrix.KINDS[shape]) if shape in matrix.KINDS else kind_from_name(name)
            for shape, name in ((shape, matrix.SHAPES[shape][0]) for shape in shapes)
        }
        assert kinds == set(DataKind), profile
        for suffix in ARCHIVE_SUFFIXES:
            assert any(name.endswith(suffix) for name in names), (profile, suffix)


@pytest.mark.parametrize("archive", ARCHIVE_FORMATS, ids=lambda archive: archive.suffixes[0])
def test_the_script_matrix_makes_every_archive_and_the_plans_staging_unpacks_it(archive, tmp_path):
    """Made as the matrix makes its data, unpacked by the staging command the engine plans."""
    for program in {"tar", "zip", *archive.node_programs}:
        if shutil.which(program) is None:
            service_missing(f"{program} is not installed (devcluster up and install-test-deps do)")
    folder = tmp_path / "data"
    (folder / "class-0").mkdir(parents=True)
    (folder / "class-0" / "img-0.txt").write_text("sample\n")
    for suffix in archive.suffixes:
        target = tmp_path / f"data{suffix}"
        matrix.make_archive(archive, folder, target)
        [staging] = advise("narval", dataset_gb=50, data_path=str(target)).storage.staging
        out = tmp_path / f"out{suffix}"
        variables = {"DATA_SOURCE": str(target), "STAGE_DIR": str(out)}
        subprocess.run(["bash", "-ec", staging.command], env=os.environ | variables, check=True)
        assert (out / "class-0" / "img-0.txt").read_text() == "sample\n"


def _readme_paragraph(containing: str) -> str:
    text = (ROOT / "README.md").read_text()
    [paragraph] = [p for p in text.split("\n\n") if containing in p]
    return paragraph


# Prose is written by hand: the data path's paragraph and the script matrix's.
@pytest.mark.parametrize("containing", ["**The data path** is", "`tests/test_script_matrix.py`"])
def test_the_readme_names_every_archive(containing):
    assert set(ARCHIVE_SUFFIXES) <= _suffixes_named(_readme_paragraph(containing))


def test_the_readme_names_every_compression_tar_runs():
    table = _readme_paragraph("| an archive |")
    [row] = [line for line in table.splitlines() if line.startswith("| an archive |")]
    for archive in ARCHIVE_FORMATS:
        if archive.compression:
            assert re.search(rf"\b{archive.compression}\b", row), archive.compression
