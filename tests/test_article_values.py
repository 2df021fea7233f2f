"""Articles quote the published numbers as they are now: an admin's change to a policy reaches
every article that cites it, and a placeholder the portal does not know is marked, never run."""

import html

from guidance.article_values import PLACEHOLDER, fill, help_text
from guidance.models import Article, Cluster, GpuType, Policy
from guidance.seed import ARTICLES


def _text(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_it_fills_known_names_and_marks_the_others():
    values = {"policy.cpus_per_gpu": "6"}
    text = "{{ policy.cpus_per_gpu }} CPUs, {{policy.cpus_per_gpu}} again, {{ policy.nope }}"
    assert fill(text, values, lambda name: f"?{name}?") == "6 CPUs, 6 again, ?policy.nope?"


def test_a_changed_policy_shows_in_the_article(user_client, seeded):
    before = _text(user_client, "/guidance/narval/")
    assert "about 100 GB or less" in before
    policy = Policy.objects.get(cluster__slug="narval")
    policy.node_local_limit_gb = 1000
    policy.save()
    after = _text(user_client, "/guidance/narval/")
    assert "about 1,000 GB or less" in after and "about 100 GB or less" not in after


def test_titles_follow_the_policy_too(user_client, seeded):
    policy = Policy.objects.get(cluster__slug="narval")
    policy.checkpoint_chunk_hours = 12
    policy.save()
    page = _text(user_client, "/guidance/narval/")
    assert "Checkpoint long jobs in 12-hour chains" in page
    assert "Split long training into 12-hour jobs" in page


def test_gpu_memory_comes_from_the_gpu_type(user_client, seeded):
    roentgen = GpuType.objects.get(cluster__slug="processing", name="roentgen")
    roentgen.memory_gb = 40
    roentgen.save()
    page = _text(user_client, "/guidance/processing/")
    article = page[page.index('id="article-choose-a-gpu"') :].split("</article>")[0]
    assert "Debugging with 40 GB</strong>" in article and "48 GB" not in article


def test_an_article_for_every_cluster_shows_their_shared_value_or_range(user_client, seeded):
    page = _text(user_client, "/guidance/")
    assert "Keep your GPUs more than 90% busy" in page  # every cluster asks for 90%
    cpus = sorted({p.cpus_per_gpu for p in Policy.objects.all()})
    assert len(cpus) > 1 and f"({cpus[0]}\N{EN DASH}{cpus[-1]} per GPU)" in page


def test_an_unknown_placeholder_is_marked_not_an_error(user_client, seeded):
    article = Article.objects.create(
        slug="odd",
        title="About {{ policy.no_such_thing }}",
        body="Up to {{ gpu.h100.memory_gb }} GB, {% load x %}{{ request.user }} and {{ 7|add:1 }}.",
    )
    article.clusters.add(Cluster.objects.get(slug="narval"))
    response = user_client.get("/guidance/narval/")
    page = response.content.decode()
    assert response.status_code == 200
    assert '<mark class="placeholder-error">{{ gpu.h100.memory_gb }}</mark>' in page
    assert "About {{ policy.no_such_thing }} (unknown)" in html.unescape(page)
    # Template code in an article is text: it is neither run nor does it break the page.
    assert "{% load x %}" in html.unescape(page) and "{{ 7|add:1 }}" in html.unescape(page)
    assert '<mark class="placeholder-error">{{ request.user }}</mark>' in page


def test_every_placeholder_of_the_seeded_articles_is_known(user_client, seeded):
    used = {m[1] for a in ARTICLES for m in PLACEHOLDER.finditer(a.body + a.title)}
    assert len(used) >= 6
    for slug in ("narval", "processing"):
        assert "placeholder-error" not in user_client.get(f"/guidance/{slug}/").content.decode()
    assert "placeholder-error" not in user_client.get("/guidance/").content.decode()


def test_the_admin_lists_the_placeholders(staff_client, seeded):
    page = html.unescape(staff_client.get("/admin/guidance/article/add/").content.decode())
    assert help_text() in page
    assert "{{ policy.node_local_limit_gb }}" in page and "{{ gpu.NAME.memory_gb }}" in page
