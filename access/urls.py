from django.urls import path

from access import views

app_name = "access"

urlpatterns = [
    path("", views.home, name="home"),  # shadowed by the selfservice catalog when that app is installed
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/<str:name>/revoke", views.token_revoke, name="token-revoke"),
]
