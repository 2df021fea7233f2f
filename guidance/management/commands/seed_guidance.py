"""Load the guidance the portal starts with. Only what is missing is created: admins' edits stay."""

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from guidance import models, seed
from guidance.doc_import import import_documents
from guidance.engine.sources import Source
from guidance.engine.types import Policy, StorageTier
from guidance.facts import POLICY_SOURCES, same_named

REASON = "Loaded from the portal's seed guidance"


def _source(source: Source | None, prefix: str = "") -> dict:
    if source is None:
        return {}
    return {f"{prefix}source_document": source.document, f"{prefix}source_section": source.section}


class Command(BaseCommand):
    help = "Create the seeded clusters, GPU types, partitions, storage, policies and articles."

    def handle(self, *args, **options) -> None:
        self.created = 0
        with transaction.atomic():
            for entry in seed.CLUSTERS:
                self._cluster(entry)
            for article in seed.ARTICLES:
                self._article(article)
        self.stdout.write(f"Guidance data: {self.created} objects created, the rest kept as is.")
        self._documents()

    def _documents(self) -> None:
        # The documents are read, not edited in the admin: each seed brings them up to date.
        folder = settings.GUIDANCE_DOCS_DIR
        if not folder.is_dir():
            self.stdout.write(
                f"No guidance documents at {folder} (GUIDANCE_DOCS_DIR): sources stay plain text."
            )
            return
        done = import_documents(folder)
        self.stdout.write(
            f"Guidance documents: {done.created} created, {done.updated} updated, "
            f"{done.unchanged} unchanged."
        )

    def _create(self, model, lookup: dict, fields: dict):
        obj = model.objects.filter(**lookup).first()
        if obj is None:
            obj = model(**lookup, **fields)
            obj._change_reason = REASON
            obj.full_clean()
            obj.save()
            self.created += 1
        return obj

    def _cluster(self, entry: seed.SeedCluster) -> None:
        facts = entry.facts
        cluster = self._create(
            models.Cluster,
            {"slug": facts.slug},
            {
                "name": facts.name,
                "scheduler": facts.scheduler.value,
                "description": entry.description,
                "note": entry.note,
                "login_host": entry.login_host,
            }
            | _source(entry.source),
        )
        self._create(
            models.Policy,
            {"cluster": cluster},
            same_named(facts.policy, Policy, but=POLICY_SOURCES)
            | _source(facts.policy.source)
            | _source(facts.policy.cpus_source, "cpus_")
            | _source(facts.policy.memory_source, "memory_")
            | _source(facts.policy.max_hours_source, "max_hours_")
            | _source(facts.policy.checkpoint_source, "checkpoint_"),
        )
        environment = facts.environment
        self._create(
            models.JobEnvironment,
            {"cluster": cluster},
            {
                "variables": "\n".join(
                    f"{name}={value}" if value else name for name, value in environment.variables
                ),
                "modules": environment.modules,
                "python_module": environment.python_module,
                "python_builder": environment.python_builder.value,
            }
            | _source(environment.source),
        )
        gpu_types = {}
        for gpu in facts.gpu_types:
            gpu_types[gpu.name] = self._create(
                models.GpuType,
                {"cluster": cluster, "name": gpu.name},
                {
                    "model": entry.models.get(gpu.name, ""),
                    "memory_gb": gpu.memory_gb,
                    "relative_speed": gpu.relative_speed,
                    "expects_full_utilization": gpu.expects_full_utilization,
                    "note": entry.notes.get(gpu.name, ""),
                    **_source(gpu.source),
                },
            )
        for part in facts.partitions:
            self._create(
                models.Partition,
                {"cluster": cluster, "name": part.name},
                {
                    "gpu_type": gpu_types[part.gpu_type],
                    "slurm_partition": part.slurm_partition,
                    "gpus_per_node": part.gpus_per_node,
                    "cpus_per_node": part.cpus_per_node,
                    "memory_per_node_mb": part.memory_per_node_mb,
                    "max_hours": part.max_hours,
                    "default_hours": part.default_hours,
                    "purpose": next(iter(part.purposes), ""),
                    "node_local_gb": part.node_local_gb,
                    "note": entry.notes.get(part.name, ""),
                    **_source(part.source),
                    **_source(part.purpose_source, "purpose_"),
                    **_source(part.hours_source, "hours_"),
                },
            )
        for site_rule in facts.rules:
            self._create(
                models.SiteRule,
                {"cluster": cluster, "rule": site_rule.rule.value},
                _source(site_rule.source),
            )
        for tier in facts.storage_tiers:
            self._create(
                models.StorageTier,
                {"cluster": cluster, "name": tier.name},
                same_named(tier, StorageTier, but=("source", "name")) | _source(tier.source),
            )

    def _article(self, entry: seed.SeedArticle) -> None:
        exists = models.Article.objects.filter(slug=entry.slug).exists()
        article = self._create(
            models.Article,
            {"slug": entry.slug},
            {"title": entry.title, "body": entry.body, "order": entry.order}
            | _source(entry.source),
        )
        if not exists and entry.clusters:
            article.clusters.set(models.Cluster.objects.filter(slug__in=entry.clusters))
