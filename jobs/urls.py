from django.urls import path

from jobs import views
from jobs.cluster import free_gpus_views, login_views
from jobs.compose import check_views, sooner_views, where_views
from jobs.compose import views as compose_views
from jobs.gpu import usage_views
from jobs.notify import views as notify_views
from jobs.plans import views as plan_views

app_name = "jobs"

urlpatterns = [
    path("new/", compose_views.compose, name="compose"),
    path("check/", check_views.check, name="check"),
    path("check/fixed/", check_views.check_fixed, name="check_fixed"),
    path("check/code/", check_views.check_code, name="check_code"),
    path("new/check-path/", compose_views.check_path, name="check_path"),
    path("new/where/", where_views.where_to_run, name="where"),
    path("new/where/go/", where_views.compose_there, name="compose_there"),
    path("compositions/", compose_views.compositions, name="compositions"),
    path("compositions/<int:pk>/", compose_views.composition, name="composition"),
    path(
        "compositions/<int:pk>/update/",
        compose_views.composition_update,
        name="composition_update",
    ),
    path("", views.jobs, name="jobs"),
    path("<int:pk>/", views.job, name="job"),
    path("<int:pk>/cancel/", views.job_cancel, name="job_cancel"),
    path("<int:pk>/retry/", views.job_retry, name="job_retry"),
    path("<int:pk>/output/", views.job_output, name="job_output"),
    path("<int:pk>/gpus/", views.job_gpus, name="job_gpus"),
    path("<int:pk>/runs/", views.job_runs, name="job_runs"),
    path("<int:pk>/rerun-failed/", views.job_rerun_failed, name="job_rerun_failed"),
    path("<int:pk>/sooner/", sooner_views.start_sooner, name="job_sooner"),
    path("<int:pk>/next-run/", views.job_next_run, name="job_next_run"),
    path("<int:pk>/program/", views.job_program_check, name="job_program_check"),
    path("plans/", plan_views.plans, name="plans"),
    path("plans/<uuid:pk>/", plan_views.plan, name="plan"),
    path("plans/<uuid:pk>/confirm/", plan_views.plan_confirm, name="plan_confirm"),
    path("plans/<uuid:pk>/decline/", plan_views.plan_decline, name="plan_decline"),
    path("logins/", login_views.accounts, name="accounts"),
    path("logins/<slug:slug>/key/", login_views.account_create, name="account_create"),
    path("logins/<int:pk>/test/", login_views.account_test, name="account_test"),
    path("logins/<int:pk>/route/", login_views.account_route, name="account_route"),
    path("logins/portal-remote", login_views.wrapper, name="wrapper"),
    path("gpus/", free_gpus_views.free_gpus, name="free_gpus"),
    path("gpus/brief/", free_gpus_views.free_gpus_brief, name="free_gpus_brief"),
    path("usage/", usage_views.usage, name="usage"),
    path("notifications/", notify_views.notifications, name="notifications"),
    path("notifications/count/", notify_views.notification_count, name="notification_count"),
    path("notifications/new/", notify_views.notifications_push, name="notifications_push"),
    path(
        "notifications/settings/",
        notify_views.notification_settings,
        name="notification_settings",
    ),
    path("<int:pk>/notifications/", notify_views.job_notifications, name="job_notifications"),
]
