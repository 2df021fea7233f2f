from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from jobs.cluster import admin_views
from portal import mcp_endpoint, soak_views, token_views, views
from portal.api import api

admin.site.site_header = "GPU portal administration"
admin.site.site_title = "GPU portal administration"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz/", views.healthz, name="healthz"),
    # Browsers and feed readers ask for it without reading the page's <link rel="icon">.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("accounts/", include("django.contrib.auth.urls")),
    path("guidance/", include("guidance.urls")),
    path("jobs/", include("jobs.urls")),
    path("settings/tokens/", token_views.tokens, name="tokens"),
    path("settings/tokens/<int:pk>/revoke/", token_views.token_revoke, name="token_revoke"),
    path("settings/tokens/actions/", token_views.token_actions, name="token_actions"),
    path("api/v1/", api.urls),
    # For coding agents: MCP over Streamable HTTP, with the API's tokens (portal/mcp_tools.py).
    path("mcp", mcp_endpoint.mcp, name="mcp"),
    path("admin/clusters/<int:pk>/host-key/", admin_views.host_key, name="cluster_host_key"),
    path(
        "admin/clusters/<int:pk>/import-partitions/",
        admin_views.import_partitions,
        name="cluster_import_partitions",
    ),
    path("admin/", admin.site.urls),
]
if settings.SOAK_HOOKS:
    urlpatterns.append(path("soak/enqueue/", soak_views.soak_enqueue))
