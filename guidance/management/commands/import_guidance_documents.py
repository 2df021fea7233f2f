"""Read the guidance documents of GUIDANCE_DOCS_DIR (or --dir) into the database."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from guidance.doc_import import import_documents


class Command(BaseCommand):
    help = "Create or update the guidance documents that sources link to, from their folder."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dir", type=Path, help="Default: the GUIDANCE_DOCS_DIR setting.")

    def handle(self, *args, **options) -> None:
        folder = options["dir"] or settings.GUIDANCE_DOCS_DIR
        if not folder.is_dir():
            raise CommandError(f"No folder of guidance documents at {folder}.")
        done = import_documents(folder)
        self.stdout.write(
            f"Guidance documents from {folder}: {done.created} created, {done.updated} updated, "
            f"{done.unchanged} unchanged."
        )
