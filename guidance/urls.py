from django.urls import path

from guidance import views

app_name = "guidance"

urlpatterns = [
    path("", views.index, name="index"),
    # Before the clusters' pages: "documents" is not a cluster's slug.
    path("documents/", views.documents, name="documents"),
    path("documents/<slug:slug>/", views.document, name="document"),
    path("<slug:slug>/", views.cluster, name="cluster"),
    path("<slug:slug>/advice/", views.advice, name="advice"),
]
