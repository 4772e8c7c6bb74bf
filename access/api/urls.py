from django.urls import path

from access.api import user_views, views

urlpatterns = [
    path("auth/login", views.LoginInfoView.as_view(), name="login-info"),
    path("auth/jwt/access_token", views.JWTExchangeView.as_view(), name="jwt-exchange"),
    path("auth/access_token", views.TokenCollectionView.as_view(), name="token-collection"),
    path("auth/access_token/<str:name>", views.TokenObjectView.as_view(), name="token-object"),
    path("auth/user/<str:user_id>/access_token", views.UserTokenCollectionView.as_view(), name="user-tokens"),
    path("auth/user/<str:user_id>/access_token/<str:name>", views.UserTokenObjectView.as_view(), name="user-token"),
]

# OSMO's user API: `api/auth/user…` (OSMO 6.4's CLI) and `api/auth/users…` (later CLIs), same views.
for _prefix in ("user", "users"):
    urlpatterns += [
        path(f"auth/{_prefix}", user_views.UserCollectionView.as_view(), name=f"{_prefix}-collection"),
        path(f"auth/{_prefix}/<str:user_id>", user_views.UserObjectView.as_view(), name=f"{_prefix}-object"),
        path(f"auth/{_prefix}/<str:user_id>/roles", user_views.UserRolesView.as_view(), name=f"{_prefix}-roles"),
        path(
            f"auth/{_prefix}/<str:user_id>/roles/<str:role_name>",
            user_views.UserRoleObjectView.as_view(),
            name=f"{_prefix}-role",
        ),
    ]
