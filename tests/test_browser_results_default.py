"""In Chromium: the composer's results directory follows the cluster chosen, through htmx, until
the user types their own."""

from tests.test_browser import browser, page  # noqa: F401  (Chromium, and alice logged in)


def test_the_results_directory_follows_the_cluster_until_the_user_types_one(page):  # noqa: F811
    page.goto("/jobs/new/")
    page.select_option("select[name=cluster]", "narval")
    field = "input[name=results_dir]"
    page.wait_for_function(f"document.querySelector('{field}').value === '$PROJECT/results'")
    page.evaluate("window.notReloaded = true")
    # The processing site publishes none: 000 names project folders but no path.
    page.select_option("select[name=cluster]", "processing")
    page.wait_for_function(f"document.querySelector('{field}').value === ''")
    assert "whose path it does not publish" in page.inner_text("#field-results_dir")
    page.select_option("select[name=cluster]", "graham")
    page.wait_for_function(f"document.querySelector('{field}').value === '$PROJECT/results'")
    # Typed by the user: it stays whatever the cluster.
    page.fill(field, "$SCRATCH/mine")

    def for_beluga(answer) -> bool:  # the live update, sent as a GET or a POST
        return "cluster=beluga" in answer.url + (answer.request.post_data or "")

    with page.expect_response(for_beluga):
        page.select_option("select[name=cluster]", "beluga")
    page.wait_for_timeout(200)  # htmx has swapped what came back
    assert page.input_value(field) == "$SCRATCH/mine"
    assert page.evaluate("window.notReloaded") is True
