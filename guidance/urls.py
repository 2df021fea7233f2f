from django.urls import path

from guidance import views

app_name = "guidance"

urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:slug>/", views.cluster, name="cluster"),
    path("<slug:slug>/advice/", views.advice, name="advice"),
]
