from django.urls import path

from jobs import account_views, check_views, job_views, usage_views, views

app_name = "jobs"

urlpatterns = [
    path("new/", views.compose, name="compose"),
    path("check/", check_views.check, name="check"),
    path("new/check-path/", views.check_path, name="check_path"),
    path("compositions/", views.compositions, name="compositions"),
    path("compositions/<int:pk>/", views.composition, name="composition"),
    path("compositions/<int:pk>/update/", views.composition_update, name="composition_update"),
    path("", job_views.jobs, name="jobs"),
    path("<int:pk>/", job_views.job, name="job"),
    path("<int:pk>/cancel/", job_views.job_cancel, name="job_cancel"),
    path("<int:pk>/retry/", job_views.job_retry, name="job_retry"),
    path("<int:pk>/output/", job_views.job_output, name="job_output"),
    path("<int:pk>/gpus/", job_views.job_gpus, name="job_gpus"),
    path("<int:pk>/next-run/", job_views.job_next_run, name="job_next_run"),
    path("logins/", account_views.accounts, name="accounts"),
    path("logins/<slug:slug>/key/", account_views.account_create, name="account_create"),
    path("logins/<int:pk>/test/", account_views.account_test, name="account_test"),
    path("usage/", usage_views.usage, name="usage"),
]
