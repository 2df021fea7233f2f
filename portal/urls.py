from django.contrib import admin
from django.urls import include, path

from portal import views

admin.site.site_header = "GPU portal administration"
admin.site.site_title = "GPU portal administration"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz/", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("guidance/", include("guidance.urls")),
    path("jobs/", include("jobs.urls")),
    path("admin/", admin.site.urls),
]
