from django.urls import path
from drf_spectacular.utils import extend_schema

from access.api import credential_views, user_views, views

urlpatterns = [
    path("auth/login", views.LoginInfoView.as_view(), name="login-info"),
    path("version", views.VersionView.as_view(), name="version"),
    path("auth/jwt/access_token", views.JWTExchangeView.as_view(), name="jwt-exchange"),
    path("auth/access_token", views.TokenCollectionView.as_view(), name="token-collection"),
    path("auth/access_token/<str:name>", views.TokenObjectView.as_view(), name="token-object"),
    path("auth/user/<str:user_id>/access_token", views.UserTokenCollectionView.as_view(), name="user-tokens"),
    path("auth/user/<str:user_id>/access_token/<str:name>", views.UserTokenObjectView.as_view(), name="user-token"),
    path("credentials", credential_views.CredentialCollectionView.as_view(), name="credential-collection"),
    path("credentials/<str:name>", credential_views.CredentialObjectView.as_view(), name="credential-object"),
]

# OSMO's user API: `api/auth/user…` (OSMO 6.4's CLI) and `api/auth/users…` (later CLIs), the same views; the
# second spelling is left out of the OpenAPI schema (one documented operation each).
USER_VIEWS = {
    "": user_views.UserCollectionView,
    "/<str:user_id>": user_views.UserObjectView,
    "/<str:user_id>/roles": user_views.UserRolesView,
    "/<str:user_id>/roles/<str:role_name>": user_views.UserRoleObjectView,
}
for _suffix, _view in USER_VIEWS.items():
    _alias = extend_schema(exclude=True)(type(f"Plural{_view.__name__}", (_view,), {}))
    urlpatterns += [
        path(f"auth/user{_suffix}", _view.as_view()),
        path(f"auth/users{_suffix}", _alias.as_view()),
    ]
