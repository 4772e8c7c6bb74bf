from django.urls import path

from access.api import views

urlpatterns = [
    path("auth/jwt/access_token", views.JWTExchangeView.as_view(), name="jwt-exchange"),
    path("auth/access_token", views.TokenCollectionView.as_view(), name="token-collection"),
    path("auth/access_token/<str:name>", views.TokenObjectView.as_view(), name="token-object"),
]
