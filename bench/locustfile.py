"""What bench/load.py's simulated users do: log in, then open their job list, a job page and its
live update, and type into the composer (its live advice), as people on the portal do."""

import itertools
import json
import os
import random
import re

from locust import HttpUser, between, task

# Written by bench/load.py: the people's names share one password; each has these jobs.
PASSWORD = os.environ["LOAD_PASSWORD"]
JOBS = json.loads(os.environ["LOAD_JOBS"])  # name -> some of their job ids
PEOPLE = itertools.cycle(sorted(JOBS))
HTMX = {"HX-Request": "true"}
ADVICE = {
    "cluster": "narval", "job_name": "train", "workload": "training", "file_count": "",
    "data_path": "/project/def-someuser/data.tar", "gpu_count": "1", "hours": "12", "nodes": "1",
    "similar_runs": "1", "environment": "none", "command": "python train.py",
    "results_dir": "$HOME/results",
}  # fmt: skip


class PortalUser(HttpUser):
    wait_time = between(0.5, 2)

    def on_start(self) -> None:
        # One session per person while there are people; load-0 owns the many jobs.
        name = next(PEOPLE)
        self.jobs = JOBS[name]
        page = self.client.get("/accounts/login/", name="login page").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        self.client.post(
            "/accounts/login/",
            {"username": name, "password": PASSWORD, "csrfmiddlewaretoken": token},
            name="log in",
        )

    @task(3)
    def job_list(self) -> None:
        self.client.get("/jobs/", name="job list")
        self.client.get("/jobs/", headers=HTMX, name="job list, live rows")

    @task(3)
    def job_page(self) -> None:
        pk = random.choice(self.jobs)
        self.client.get(f"/jobs/{pk}/", name="job page")
        self.client.get(f"/jobs/{pk}/", headers=HTMX, name="job page, live status")

    @task(3)
    def live_advice(self) -> None:
        size = random.choice(["5", "50", "500"])
        self.client.get(
            "/jobs/new/", params=ADVICE | {"dataset_gb": size}, headers=HTMX, name="live advice"
        )
