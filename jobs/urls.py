from django.urls import path

from jobs import check_views, views

app_name = "jobs"

urlpatterns = [
    path("new/", views.compose, name="compose"),
    path("check/", check_views.check, name="check"),
    path("compositions/", views.compositions, name="compositions"),
    path("compositions/<int:pk>/", views.composition, name="composition"),
    path("compositions/<int:pk>/update/", views.composition_update, name="composition_update"),
]
