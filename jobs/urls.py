from django.urls import path

from jobs import check_views, views

app_name = "jobs"

urlpatterns = [
    path("new/", views.compose, name="compose"),
    path("check/", check_views.check, name="check"),
]
