"""Every figure and rule the engine and the seed data cite is stated in the section they cite.

Each document-backed source is read from the real documents and must hold the figures or key
words listed for it here; a source not in the table, or one naming no document, fails the test
unless it is one of the few sources outside the documents. So a new citation is checked, too.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from guidance import seed
from guidance.doc_outline import outline
from guidance.engine import Overrides, Workload, sources
from guidance.engine.script_check import held_gpus
from guidance.engine.sources import Source
from tests.engine_helpers import advise, note
from tests.services import service_missing
from tests.test_guidance_documents import _engine_sources

# Sources that name no guidance document: the portal links none, the admin note says more.
OUTSIDE_THE_DOCUMENTS = {
    sources.PUBLIC_HARDWARE,
    sources.PORTAL_DEFAULTS,
    sources.PORTAL_PLACEHOLDERS,
    sources.SBATCH_SCRIPT_RULES,
    sources.SBATCH_TIME,
    sources.SBATCH_MEMORY,
    sources.SBATCH_OPTIONS,
    sources.SBATCH_ARRAY,
    held_gpus.APPTAINER_GPUS,
}

# What each document-backed source is cited for, as its section writes it (lower case, markup
# removed). Facts and key words, not the documents' sentences.
STATES: dict[Source, tuple[str, ...]] = {
    sources.DATASET_SIZE_TIERS: ("10 gb", "100 gb", "$slurm_tmpdir", "project"),
    sources.SMALL_FILES: ("hundreds of thousands", "few hundred kilobytes", "single-file archives"),
    sources.LONG_RUNNING: ("checkpointing", "24 hours"),
    sources.SIMILAR_JOBS: ("grouping many jobs into one",),
    sources.AVOID_ANACONDA: ("avoid using anaconda", "virtualenv"),
    sources.ARCHIVE_DATASET: ("small files", "tar"),
    sources.INTERACTIVE_FIRST: ("salloc", "internet access"),
    sources.SBATCH_ELEMENTS: ("account", "cpus", "6", "32000m", "béluga: 7 days", "28 days"),
    sources.SBATCH_EXAMPLE: ("32000 cedar", "47000 béluga", "64000 graham"),
    sources.CHECKPOINT_CHAIN: ("24 hour", "--array 1-<n_blocs>%1", "%1", "last_checkpoint"),
    sources.PROCESSING_SCRATCH: ("/processing/", "$scratch", "wiped"),
    sources.PROCESSING_STAGING: ("copy your training data", "rsync", "$scratch"),
    sources.PROCESSING_TRAINING: ("a6000", "a100", "rtx", "roentgen", "48gb", "near 100%"),
    sources.PROCESSING_INFERENCE: ("network storage", "11gb", "2080ti"),
    sources.PROCESSING_CLEANUP: ("clean up", "project data folders", "/mnt/processing/"),
    sources.UTILIZATION_TARGET: (">90%",),
    sources.RUNAI: ("runai dashboard", "workloads", "gpu compute utilization"),
    sources.DATALOADER: ("num_workers", "pin_memory", "persistent_workers", "batch_size"),
    sources.NO_BRAINER_TWEAKS: ("zero_grad(set_to_none=true)", "cudnn.benchmark"),
    sources.CAREFUL_TWEAKS: ("distributeddataparallel",),
    sources.STORAGE_AREAS: ("50gb", "500k", "20tb", "1m files", "60 days", "1tb", "2tb", "5000"),
    sources.SINGLE_NODE_STAGING: ("10 gb", "100 gb", "$slurm_tmpdir"),
    sources.MULTI_NODE_STAGING: ("srun", "$slurm_nnodes", "--ntasks-per-node=1"),
    sources.VENV_IN_JOB: ("virtualenv --no-download", "pip install --no-index"),
    sources.VENV_MULTI_NODE: ("each node", "virtualenv --no-download", "srun"),
    sources.MODULES_IN_JOBS: ("module load",),
    sources.NOTES_SBATCH_ELEMENTS: ("narval: 7 days", "28 days"),
    sources.RAM_DISK: ("/tmp", "tmpfs", "cleared at job end", "cgroup limit"),
    sources.SBATCH_DIRECTIVES: ("#sbatch --nodes", "--cpus-per-task", "--mem", "--gres=gpu"),
    sources.SINGLE_GPU_PYTORCH: ("batch_size",),
    sources.MULTI_GPU_PYTORCH: ("distributeddataparallel", "replica"),
    # 003's figures beside its rules: 35% used on 71 GPUs would be 28 GPUs at 90%.
    Source(sources.DOC_DGX, "The issue visualized"): ("71", "28 gpus", "90%"),
    Source(sources.DOC_DGX, "Section 1: How to check GPU utilization / On a local machine"): (
        "nvidia-smi",
    ),
}

# How the documents name each kind of work.
PURPOSE_WORDS = {
    Workload.TRAINING: "training",
    Workload.INFERENCE: "inference",
    Workload.DEBUGGING: "debug",
    Workload.INTERACTIVE: "interactive",
}

# Numbers written out in words by the documents.
IN_WORDS = {100_000: "hundreds of thousands", 300: "few hundred kilobytes"}

_MARKUP = re.compile(r"'''|\*\*|==|`|</?(tt|code|b)>")


@pytest.fixture(scope="module")
def sections() -> dict[Source, str]:
    folder = settings.GUIDANCE_DOCS_DIR
    if not folder.is_dir():
        service_missing(f"no guidance documents at {folder} (GUIDANCE_DOCS_DIR)")
    return {source: _section_text(folder, source) for source in STATES}


def _section_text(folder: Path, source: Source) -> str:
    parsed = outline((folder / source.document).read_text(encoding="utf-8"))
    anchor = parsed.anchor(source.section)
    body = next(p.body for p in parsed.parts if p.heading and p.heading.anchor == anchor)
    return " ".join(_MARKUP.sub("", body).casefold().split())


def _states(text: str, figure: str) -> bool:
    # A figure stands alone: "6" is not the 6 of "60 days" or "0.6", nor "28 days" of "128 days".
    before = r"(?<![\w.])" if figure[0].isdigit() else r"(?<!\w)" if figure[0].isalnum() else ""
    after = r"(?!\w)" if figure[-1].isalnum() else ""
    return re.search(before + re.escape(figure) + after, text) is not None


def _seed_figures() -> Iterator[tuple[str, Source | None, str]]:
    """(what, the source cited for it, the figure as the documents write it: forms split
    by "|")."""
    for entry in seed.CLUSTERS:
        cluster = entry.facts
        policy = cluster.policy
        at = cluster.slug
        yield f"{at}: CPUs per GPU", policy.cpus_source, str(policy.cpus_per_gpu)
        memory = policy.memory_per_gpu_mb
        yield f"{at}: memory per GPU", policy.memory_source, f"{memory}m|{memory}"
        if days := re.search(r"at most (\d+) days", entry.description):
            assert int(days[1]) * 24 == cluster.max_hours, f"{at}: description and partitions"
            yield f"{at}: its description's limit", entry.source, f"{days[1]} days"
        # A limit's section names the cluster as well: 002's "7 days" are Béluga's, not Narval's.
        limit = f"{cluster.max_hours / 24:g} days"
        yield f"{at}: maximum job duration", policy.max_hours_source, limit
        yield f"{at}: whose maximum job duration", policy.max_hours_source, cluster.name.lower()
        for partition in cluster.partitions:
            days = f"{partition.max_hours / 24:g} days"
            yield f"{at} {partition.name}: max duration", partition.hours_source, days
            whose = f"{at} {partition.name}: whose max duration"
            yield whose, partition.hours_source, cluster.name.lower()
            for purpose in partition.purposes:
                # The section names the card and the work it is for.
                what = f"{at} {partition.name}: set aside for {purpose}"
                yield what, partition.purpose_source, partition.gpu_type
                yield what, partition.purpose_source, PURPOSE_WORDS[purpose]
        # The engine cites its own rules for these; a seeded value must be the one they state.
        gb = sources.DATASET_SIZE_TIERS
        yield f"{at}: in-memory limit", gb, f"{policy.in_memory_limit_gb:g} gb"
        yield f"{at}: node-local limit", gb, f"{policy.node_local_limit_gb:g} gb"
        hours = f"{policy.checkpoint_chunk_hours:g} hours"
        yield f"{at}: checkpoint chunk", sources.LONG_RUNNING, hours
        percent = f">{policy.utilization_target_percent}%"
        yield f"{at}: utilization target", sources.UTILIZATION_TARGET, percent
        files = IN_WORDS.get(policy.many_files_threshold, str(policy.many_files_threshold))
        yield f"{at}: many files", sources.SMALL_FILES, files
        small = IN_WORDS.get(policy.small_file_kb, f"{policy.small_file_kb} kb")
        yield f"{at}: small file", sources.SMALL_FILES, small
        for tier in cluster.storage_tiers:
            if tier.quota_bytes:
                quota = _size(tier.quota_bytes)
                yield f"{at} {tier.name}: quota", tier.source, quota
            if tier.quota_files:
                files = _count(tier.quota_files)
                yield f"{at} {tier.name}: files", tier.source, files


def _size(quota_bytes: int) -> str:
    terabytes = quota_bytes / 1000**4
    return f"{terabytes:g}tb" if terabytes >= 1 else f"{quota_bytes / 1000**3:g}gb"


def _count(files: int) -> str:
    if files >= 1_000_000:
        return f"{files // 1_000_000}m files"
    return f"{files // 1000}k" if files >= 100_000 else str(files)


def _seed_sources() -> Iterator[tuple[str, Source | None]]:
    for entry in seed.CLUSTERS:
        cluster = entry.facts
        policy = cluster.policy
        yield cluster.slug, entry.source
        yield f"{cluster.slug} policy", policy.source
        yield f"{cluster.slug} CPUs per GPU", policy.cpus_source
        yield f"{cluster.slug} memory per GPU", policy.memory_source
        yield f"{cluster.slug} environment", cluster.environment.source
        yield f"{cluster.slug} maximum job duration", policy.max_hours_source
        for obj in (*cluster.gpu_types, *cluster.partitions, *cluster.storage_tiers):
            yield f"{cluster.slug} {obj.name}", obj.source
        for partition in cluster.partitions:
            yield f"{cluster.slug} {partition.name} purpose", partition.purpose_source
            yield f"{cluster.slug} {partition.name} time limit", partition.hours_source
        for rule in cluster.rules:
            yield f"{cluster.slug} {rule.rule}", rule.source
    for article in seed.ARTICLES:
        yield article.slug, article.source


def test_each_source_states_what_it_is_cited_for(sections):
    missing = [
        f"{source}: {figure!r}"
        for source, figures in STATES.items()
        for figure in figures
        if not _states(sections[source], figure)
    ]
    assert not missing


def test_each_seeded_figure_is_in_the_section_it_cites(sections):
    wrong = []
    for what, source, figure in _seed_figures():
        if source in OUTSIDE_THE_DOCUMENTS:
            continue
        forms = figure.split("|")  # any of the ways a document may write it
        if source not in STATES or not any(_states(sections[source], f) for f in forms):
            wrong.append(f"{what} ({figure}) cites {source}")
    assert not wrong


def test_every_seeded_time_limit_and_purpose_has_a_source():
    missing = [what for what, source, _ in _seed_figures() if source is None]
    assert not missing


# A duration as the documents would write one: "7 days", "24 hours", "28 days".
_DURATION = re.compile(r"\b\d+\s*(days?|hours?|h)\b")


@pytest.mark.parametrize("entry", [seed.PROCESSING, seed.DGX], ids=lambda e: e.facts.slug)
def test_a_limit_no_document_states_cites_the_placeholders(entry):
    """000 and 003 give no time limit (nor 000 a node layout): their 7 days cite the portal's
    placeholders, and the admin note says so. Should the document come to state one, this
    fails, so that the limit cites it instead."""
    facts = entry.facts
    document = {"processing": sources.DOC_PROCESSING, "dgx": sources.DOC_DGX}[facts.slug]
    folder = settings.GUIDANCE_DOCS_DIR
    if not folder.is_dir():
        service_missing(f"no guidance documents at {folder} (GUIDANCE_DOCS_DIR)")
    text = (folder / document).read_text(encoding="utf-8").casefold()
    assert not _DURATION.search(text)
    assert facts.policy.max_hours_source == sources.PORTAL_PLACEHOLDERS
    assert {p.hours_source for p in facts.partitions} == {sources.PORTAL_PLACEHOLDERS}
    assert "7-day" in entry.note and "placeholder" in entry.note


@pytest.mark.parametrize("entry", seed.CLUSTERS, ids=lambda e: e.facts.slug)
def test_the_time_limit_rules_cite_where_the_clusters_limit_is_stated(entry, sections):
    facts = entry.facts
    limit = facts.policy.max_hours_source
    too_long = advise(facts.slug, hours=facts.max_hours + 1)
    assert note(too_long.errors, "over_max_duration").source == limit
    partition = facts.partitions[0]
    minutes = int(partition.max_hours * 60) + 60
    by_hand = advise(facts.slug, overrides=Overrides(minutes=minutes))
    assert note(by_hand.errors, "time_over_partition").source == partition.hours_source
    # ...and that source states the limit, or is one of the few outside the documents.
    days = f"{facts.max_hours / 24:g} days"
    stated = limit in OUTSIDE_THE_DOCUMENTS or (
        _states(sections[limit], days) and _states(sections[limit], facts.name.lower())
    )
    assert stated


def test_the_portals_defaults_are_the_tutorials_suggestions(sections):
    defaults = seed.PROCESSING.facts.policy
    assert defaults.cpus_source == defaults.memory_source == sources.PORTAL_DEFAULTS
    text = sections[sources.SBATCH_ELEMENTS]
    assert _states(text, str(defaults.cpus_per_gpu))
    assert _states(text, f"{defaults.memory_per_gpu_mb}m")


def test_no_source_goes_unchecked():
    cited = [(name, source) for name, source in _engine_sources().items()]
    cited += list(_seed_sources())
    unchecked = [
        f"{name}: {source}"
        for name, source in cited
        if source is not None and source not in STATES and source not in OUTSIDE_THE_DOCUMENTS
    ]
    assert not unchecked
    documents = {s.document for s in OUTSIDE_THE_DOCUMENTS}
    assert not documents & {s.document for s in STATES}


def _node_sources(page: str) -> tuple[dict[str, str], dict[str, str]]:
    """The node-type table's Sources cell by node type, and the numbered list under it."""
    cells = dict(
        re.findall(r'<td>([\w-]+)</td>.*?<td class="node-type-sources">(.*?)</td>', page, re.S)
    )
    listed = dict(re.findall(r'<li id="node-source-(\d+)"><span class="source">(.*?)</span>', page))
    return cells, listed


def test_the_cluster_page_numbers_each_node_types_sources(user_client, seeded):
    cells, listed = _node_sources(user_client.get("/guidance/processing/").content.decode())
    # roentgen: hardware and time limit are placeholders, its purpose is 000's training section.
    [(both, placeholders), (purpose, training)] = re.findall(
        r'([\w ,]+) <a href="#node-source-(\d+)">', cells["roentgen"]
    )
    assert both == "hardware, max time" and purpose == "set aside"
    assert "not published by the site yet" in listed[placeholders]
    assert "<a " not in listed[placeholders]  # a placeholder links nowhere
    assert sources.PROCESSING_TRAINING.section in listed[training]
    assert 'href="/guidance/documents/000_6e5e8c8484f3c234/#2-training-process"' in listed[training]
    assert "set aside" not in cells["rtx"]  # for any work: nothing to cite

    cells, listed = _node_sources(user_client.get("/guidance/narval/").content.decode())
    limit = re.search(r'max time <a href="#node-source-(\d+)">', cells["a100"])[1]
    assert sources.NOTES_SBATCH_ELEMENTS.section.replace("&", "&amp;") in listed[limit]
