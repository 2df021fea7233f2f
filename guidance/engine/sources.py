"""Where each rule of the engine comes from: a document of shared/guidance-docs and its section.

A section is the document's own heading, a nested one written "Outer / Inner" (Inner anywhere
below Outer): the portal links each to that heading in its copy of the document, and
tests/test_guidance_documents.py fails when a heading named here is not in the document."""

from dataclasses import dataclass

DOC_PROCESSING = "000_6e5e8c8484f3c234.txt"
DOC_AI_ML = "001_5f2bc19f2ff4af17.txt"
DOC_ML_TUTORIAL = "002_7837a9bf9505db0f.txt"
DOC_DGX = "003_c24777732a429f30.txt"
DOC_FEDERATION_NOTES = "004_95f926fd92fa5250.txt"


@dataclass(frozen=True)
class Source:
    document: str
    section: str

    def __str__(self) -> str:
        return f"{self.document}, {self.section}"


# Federation wiki, "AI and Machine Learning" (001).
DATASET_SIZE_TIERS = Source(
    DOC_AI_ML, "Managing your datasets / Choosing the right storage type for your dataset"
)
SMALL_FILES = Source(
    DOC_AI_ML,
    "Managing your datasets / Datasets containing lots of small files (e.g. image datasets)",
)
LONG_RUNNING = Source(DOC_AI_ML, "Long running computations")
SIMILAR_JOBS = Source(DOC_AI_ML, "Running many similar jobs")
AVOID_ANACONDA = Source(DOC_AI_ML, "Python / Avoid Anaconda")

# Federation "Machine learning tutorial" (002).
ARCHIVE_DATASET = Source(DOC_ML_TUTORIAL, "Step 2: Archiving a data set")
INTERACTIVE_FIRST = Source(DOC_ML_TUTORIAL, "Step 4: Interactive job (salloc)")
SBATCH_ELEMENTS = Source(
    DOC_ML_TUTORIAL, "Step 5: Scripted job (sbatch) / Important elements of a sbatch script"
)
# Memory per GPU for Cedar, Béluga and Graham, in the example script's comments.
SBATCH_EXAMPLE = Source(DOC_ML_TUTORIAL, "Step 5: Scripted job (sbatch) / Example script")
CHECKPOINT_CHAIN = Source(
    DOC_ML_TUTORIAL, "Step 5: Scripted job (sbatch) / Checkpointing a long-running job"
)

# The processing cluster's best practices (000).
PROCESSING_SCRATCH = Source(DOC_PROCESSING, "Introduction")
PROCESSING_STAGING = Source(DOC_PROCESSING, "1. Data Preparation")
PROCESSING_TRAINING = Source(DOC_PROCESSING, "2. Training Process")
PROCESSING_INFERENCE = Source(DOC_PROCESSING, "3. Inference")
PROCESSING_CLEANUP = Source(DOC_PROCESSING, "4. Best Practice")

# DGX cluster guidelines (003).
# The >90% target is in the opening text, under the document's title.
UTILIZATION_TARGET = Source(DOC_DGX, "DGX cluster guidelines")
RUNAI = Source(DOC_DGX, "Section 1: How to check GPU utilization / On the DGX cluster")
_OPTIMIZE = "Section 2: How to Optimize GPU utilization"
DATALOADER = Source(
    DOC_DGX,
    f"{_OPTIMIZE} / 1. Make the most of the pytorch dataloader: torch.utils.data.DataLoader",
)
NO_BRAINER_TWEAKS = Source(DOC_DGX, f"{_OPTIMIZE} / 2. No brainer code tweaks")
CAREFUL_TWEAKS = Source(DOC_DGX, f"{_OPTIMIZE} / 3. code tweaks to think about")

# A user's notes on the federation's clusters (004).
STORAGE_AREAS = Source(DOC_FEDERATION_NOTES, "Data / Folders/Filesystem")
SINGLE_NODE_STAGING = Source(DOC_FEDERATION_NOTES, "Data Storage in HPC / single node jobs")
MULTI_NODE_STAGING = Source(DOC_FEDERATION_NOTES, "Data Storage in HPC / Multinode jobs")
VENV_IN_JOB = Source(
    DOC_FEDERATION_NOTES,
    "Step 3: Preparing your virtual environment / Creating a virtual environment inside of your "
    "single-node job",
)
VENV_MULTI_NODE = Source(
    DOC_FEDERATION_NOTES,
    "Step 3: Preparing your virtual environment / Creating a virtual environment inside of your "
    "multi-nodes job",
)
MODULES_IN_JOBS = Source(
    DOC_FEDERATION_NOTES, "SLURM Workload manager / Commands for the system (linux commands)"
)
# 004's copy of 002's list of sbatch elements, which adds Narval to the 7-day clusters.
NOTES_SBATCH_ELEMENTS = Source(
    DOC_FEDERATION_NOTES,
    "ML & DL steps / Step 5: Scripted job (sbatch) / Important elements of a sbatch script",
)
RAM_DISK = Source(DOC_FEDERATION_NOTES, "Large collections of files handling / RAM disk")
SBATCH_DIRECTIVES = Source(
    DOC_FEDERATION_NOTES, "SLURM Workload manager / commands for scheduler (resources + account_no)"
)

# Facts the documents do not give: hardware from the clusters' own published pages.
PUBLIC_HARDWARE = Source(
    "the cluster's public documentation", "GPU node types (see the admin note)"
)
# Figures a site has not published yet (the processing cluster's node layout and time limit, the
# DGX cluster's time limit): the portal's stand-ins until its admins publish theirs.
PORTAL_PLACEHOLDERS = Source(
    "the portal's placeholders", "not published by the site yet (see the admin note)"
)
# A site whose documents give no CPUs or memory per GPU gets 002's suggestions for one GPU: the
# citation says they are the portal's stand-in, not the site's rule.
PORTAL_DEFAULTS = Source(
    "the portal's defaults", "the federation tutorial's suggestions (see the admin note)"
)
SINGLE_GPU_PYTORCH = Source(DOC_FEDERATION_NOTES, "pytorch with single-gpu")
MULTI_GPU_PYTORCH = Source(
    DOC_FEDERATION_NOTES, "Pytorch with multi-gpu / Data parallelism with multiple GPUs"
)

# Slurm's own manual, for how sbatch reads a script: no cluster document spells these rules out.
SBATCH_SCRIPT_RULES = Source(
    "Slurm's sbatch manual (man sbatch)", "DESCRIPTION: the batch script and its #SBATCH lines"
)
SBATCH_TIME = Source("Slurm's sbatch manual (man sbatch)", "-t, --time")
SBATCH_MEMORY = Source("Slurm's sbatch manual (man sbatch)", "--mem, --mem-per-cpu, --mem-per-gpu")
SBATCH_OPTIONS = Source("Slurm's sbatch manual (man sbatch)", "OPTIONS")
SBATCH_ARRAY = Source("Slurm's sbatch manual (man sbatch)", "-a, --array")
