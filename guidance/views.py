from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from guidance import citations, engine, models, published
from guidance.article_values import shown_values
from guidance.doc_outline import outline
from guidance.doc_render import render_document
from guidance.engine.code_check.catalogue import RULES as CODE_RULES
from guidance.engine.code_check.catalogue import RuleInfo
from guidance.engine.sources import Source
from guidance.facts import cluster_facts
from guidance.forms import AdviceForm
from guidance.nul import checks_nul_per_field


def _articles_for(cluster: models.Cluster | None):
    articles = models.Article.objects.filter(published=True)
    if cluster is None:
        return articles.filter(clusters=None)
    return articles.filter(Q(clusters=cluster) | Q(clusters=None)).distinct()


@dataclass(frozen=True)
class CodeRuleRow:
    """A training-code rule as the cluster applies it: the catalogue's, or the admin's setting."""

    rule: RuleInfo
    setting: models.CodeRuleSetting | None

    @property
    def enabled(self) -> bool:
        return self.setting is None or self.setting.enabled

    @property
    def source(self) -> Source | models.CodeRuleSetting:
        if self.setting is not None and self.setting.source_document:
            return self.setting
        return self.rule.source


def _code_rules(cluster: models.Cluster) -> list[CodeRuleRow]:
    """Every rule of the training-code checker, most impact first, with this cluster's settings."""
    settings = {s.rule: s for s in cluster.code_rules.all()}
    rules = sorted(CODE_RULES.values(), key=lambda r: r.impact.rank)
    return [CodeRuleRow(r, settings.get(r.key)) for r in rules]


def _get_cluster(slug: str) -> models.Cluster:
    cluster = published.cluster_with_facts(slug)
    if cluster is None:
        raise Http404("No such cluster.")
    return cluster


@login_required
@require_safe
def index(request: HttpRequest) -> HttpResponse:
    clusters = models.Cluster.objects.annotate(
        node_types=Count("partitions", distinct=True),
        gpu_type_count=Count("gpu_types", distinct=True),
    )
    ctx = {
        "clusters": clusters,
        "articles": _articles_for(None),
        # Articles here are about every cluster: they show the values all clusters share.
        "article_values": shown_values(models.Cluster.objects.with_facts()),
    }
    return render(request, "guidance/index.html", ctx)


@login_required
@require_safe
def cluster(request: HttpRequest, slug: str) -> HttpResponse:
    obj = _get_cluster(slug)
    partitions = list(obj.partitions.all())
    node_sources = citations.numbered(p.cited_facts() for p in partitions)
    ctx = {
        "cluster": obj,
        "partition_rows": list(zip(partitions, node_sources.rows, strict=True)),
        "node_sources": node_sources.citations,
        "policy": getattr(obj, "policy", None),
        "environment": getattr(obj, "job_environment", None),
        "code_rules": _code_rules(obj),
        "articles": _articles_for(obj),
        "article_values": shown_values([obj]),
    }
    return render(request, "guidance/cluster.html", ctx)


@checks_nul_per_field
@login_required
@require_safe
def advice(request: HttpRequest, slug: str) -> HttpResponse:
    obj = _get_cluster(slug)
    form = AdviceForm(request.GET or None, cluster=obj)
    recommendation = None
    if form.is_valid():
        recommendation = engine.recommend(form.job_spec(), cluster_facts(obj))
        form.add_engine_errors(recommendation.errors)
    ctx = {"cluster": obj, "form": form, "rec": recommendation}
    template = "guidance/advice.html"
    if request.htmx:
        template += "#result"
    return render(request, template, ctx)


@login_required
@require_safe
def documents(request: HttpRequest) -> HttpResponse:
    docs = models.Document.objects.only("file_name", "slug", "title")
    return render(request, "guidance/documents.html", {"documents": docs})


@login_required
@require_safe
def document(request: HttpRequest, slug: str) -> HttpResponse:
    doc = get_object_or_404(models.Document, slug=slug)
    rendered = render_document(outline(doc.text))
    ctx = {"document": doc, "title_anchor": rendered.title_anchor, "parts": rendered.parts}
    return render(request, "guidance/document.html", ctx)
