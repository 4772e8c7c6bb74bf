from django.urls import path

from quotas.api import pool_quota, views, what_if

urlpatterns = [
    path("pool_quota", pool_quota.PoolQuotaView.as_view(), name="pool-quota"),  # OSMO's path
    path("quotas/what-if", what_if.WhatIfView.as_view(), name="quota-what-if"),
    path("quotas/node_pools", views.NodePoolListView.as_view(), name="quota-node-pool-list"),
    path("quotas/node_pools/<str:name>", views.NodePoolView.as_view(), name="quota-node-pool"),
    path(
        "quotas/node_pools/<str:name>/<str:team_kind>/<str:team>",
        views.TeamQuotaView.as_view(),
        name="quota-team",
    ),
]
