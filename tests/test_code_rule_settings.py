"""Admins' settings of the training-code rules, per cluster: a rule switched off says nothing on
that cluster only, a reworded one speaks the admin's words and cites the site's source; the
cluster's page lists the rules as it applies them; every process sees a change at once."""

import html

from guidance import published
from guidance.engine.code_check.catalogue import RULES
from guidance.facts import cluster_facts
from guidance.models import Cluster, CodeRuleSetting, SiteRule
from tests.source_helpers import shown
from tests.test_api_check_code import LOADER

ADD = "/admin/guidance/coderulesetting/add/"
WORDS = "On Narval, give the DataLoader 8 workers: each GPU node has 48 cores for 4 GPUs."


def _set_in_admin(staff_client, cluster: str, rule: str, **fields) -> None:
    data = {
        "cluster": Cluster.objects.get(slug=cluster).pk,
        "rule": rule,
        "wording": "",
        "source_document": "",
        "source_section": "",
        "note": "",
    } | fields
    response = staff_client.post(ADD, data)
    assert response.status_code == 302, html.unescape(response.content.decode())


def _checked(client, cluster: str) -> str:
    data = {"code-cluster": cluster, "code-program": LOADER}
    response = client.post("/jobs/check/code/", data)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_rule_switched_off_is_silent_on_that_cluster_only(staff_client, seeded):
    finding = 'data-rule="dataloader_num_workers"'
    assert finding in _checked(staff_client, "narval")
    _set_in_admin(staff_client, "narval", "dataloader_num_workers")  # "enabled" left unticked
    assert finding not in _checked(staff_client, "narval")
    assert finding in _checked(staff_client, "cedar")
    assert 'data-rule="dataloader_pin_memory"' in _checked(staff_client, "narval")


def test_a_reworded_rule_speaks_the_admins_words_and_cites_the_sites_source(staff_client, seeded):
    _set_in_admin(
        staff_client,
        "narval",
        "dataloader_num_workers",
        enabled="on",
        wording=WORDS,
        source_document="Narval user handbook",
        source_section="Data loading",
    )
    page = _checked(staff_client, "narval")
    start = page.index('data-rule="dataloader_num_workers"')
    finding = page[start : page.index("</div>", page.index("finding-message", start))]
    assert f'<p class="finding-message">{WORDS}</p>' in finding
    assert "Source: Narval user handbook, Data loading" in page[start:]
    cedar = _checked(staff_client, "cedar")
    assert WORDS not in cedar


def test_the_clusters_page_lists_the_rules_as_it_applies_them(staff_client, seeded):
    _set_in_admin(staff_client, "narval", "data_parallel")
    _set_in_admin(staff_client, "narval", "tf32", enabled="on", wording=WORDS)
    page = html.unescape(staff_client.get("/guidance/narval/").content.decode())
    section = page[page.index("Rules for training code") :]
    for rule in RULES.values():
        assert rule.title in section
    off = section[section.index('data-rule="data_parallel"') :]
    assert off[: off.index("</li>")].count("Off on this cluster.") == 1
    reworded = section[section.index('data-rule="tf32"') :]
    assert f"Reworded on this cluster:</em> {WORDS}" in reworded[: reworded.index("</li>")]
    assert "High impact" in section and shown(RULES["data_parallel"].source) in section
    assert '/jobs/check/?cluster=narval#training-program">Check a training program</a>' in page
    cedar = html.unescape(staff_client.get("/guidance/cedar/").content.decode())
    assert "Rules for training code" in cedar and "Off on this cluster" not in cedar


def test_a_cluster_is_edited_with_its_settings_inline(staff_client, seeded):
    narval = Cluster.objects.get(slug="narval")
    page = staff_client.get(f"/admin/guidance/cluster/{narval.pk}/change/").content.decode()
    assert 'name="code_rules-TOTAL_FORMS"' in page
    assert '<option value="dataloader_num_workers">' in page


def test_one_setting_per_rule_and_cluster(staff_client, seeded):
    _set_in_admin(staff_client, "narval", "tf32")
    narval = Cluster.objects.get(slug="narval")
    data = {"cluster": narval.pk, "rule": "tf32", "wording": "", "note": ""}
    page = html.unescape(staff_client.post(ADD, data).content.decode())
    assert "already exists" in page
    assert CodeRuleSetting.objects.filter(cluster=narval).count() == 1


def test_every_change_is_kept_in_its_history(staff_client, seeded):
    _set_in_admin(staff_client, "narval", "tf32")
    setting = CodeRuleSetting.objects.get(cluster__slug="narval", rule="tf32")
    setting.wording = WORDS
    setting.save()
    assert [h.wording for h in setting.history.order_by("history_date")] == ["", WORDS]


def test_saving_or_deleting_a_setting_reaches_the_kept_guidance_at_once(seeded):
    assert cluster_facts(published.cluster_with_facts("narval")).code_rules == ()
    narval = Cluster.objects.get(slug="narval")
    setting = CodeRuleSetting.objects.create(cluster=narval, rule="tf32", enabled=False)
    (rule,) = cluster_facts(published.cluster_with_facts("narval")).code_rules
    assert (rule.rule, rule.enabled, rule.wording, rule.source) == ("tf32", False, "", None)
    setting.delete()
    assert cluster_facts(published.cluster_with_facts("narval")).code_rules == ()
    # The script checker's rules likewise.
    before = len(cluster_facts(published.cluster_with_facts("cedar")).rules)
    SiteRule.objects.filter(cluster__slug="cedar", rule="avoid_anaconda").delete()
    assert len(cluster_facts(published.cluster_with_facts("cedar")).rules) == before - 1
