"""A hand edit of the composer's script is checked before it is saved or submitted: the script
checker's findings on the edited text that it does not have on the text the form wrote (a time
limit over the partition's maximum, a GPU request against guidance...)."""

import hashlib

from guidance.engine.script_check import check_script
from guidance.engine.types import Note
from guidance.facts import cluster_facts
from guidance.models import Cluster


def kept(text: str) -> str:
    """What the form sends back to keep this very text despite its findings: a later change to
    the text is checked again."""
    return hashlib.sha256(_saved_as(text).encode()).hexdigest()[:32]


def new_findings(edited: str, generated: str, cluster: Cluster) -> tuple[Note, ...]:
    facts = cluster_facts(cluster)
    written = {(note.code, note.message) for note in check_script(generated, facts).notes}
    # A browser sends a textarea's line breaks as CRLF; what is saved has them as LF.
    found = check_script(_saved_as(edited), facts).notes
    return tuple(note for note in found if (note.code, note.message) not in written)


def _saved_as(text: str) -> str:
    return text.replace("\r\n", "\n")
