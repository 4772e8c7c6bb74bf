from django.urls import path

from selfservice import credential_views, views

app_name = "selfservice"

urlpatterns = [
    path("", views.catalog, name="catalog"),
    path("login/", views.PortalLoginView.as_view(), name="login"),
    path("pools/<str:name>/", views.pool_detail, name="pool"),
    path("pools/<str:name>/submit/", views.submit_page, name="submit"),
    path("pools/<str:name>/submit/preview/", views.preview, name="preview"),
    path("workflows/", views.workflow_list, name="workflows"),
    path("workflows/<str:workflow_id>/", views.workflow_detail, name="workflow"),
    path("workflows/<str:workflow_id>/tasks/<str:task_name>/log/", views.task_log, name="task-log"),
    path("workflows/<str:workflow_id>/cancel/", views.workflow_cancel, name="workflow-cancel"),
    path("profile/", views.profile_page, name="profile"),
    path("profile/credentials/", credential_views.credential_add, name="credential-add"),
    path("profile/credentials/<str:name>/delete/", credential_views.credential_delete, name="credential-delete"),
    path("requests/", views.requests_page, name="requests"),
    path("requests/<str:kind>/", views.requests_of_kind, name="requests-kind"),
    path("requests/<str:kind>/<int:pk>/withdraw/", views.request_withdraw, name="request-withdraw"),
]
