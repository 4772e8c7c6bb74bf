from django.urls import path

from pools.api import history, machine_pools, profile, resources, views

urlpatterns = [
    path("configs/history", history.HistoryView.as_view(), name="config-history"),
    path("configs/history/rollback", history.RollbackView.as_view(), name="config-rollback"),
    path(
        "configs/history/<str:config_type>/revision/<int:revision>",
        history.RevisionView.as_view(),
        name="config-revision",
    ),
    path(
        "configs/history/<str:config_type>/revision/<int:revision>/tags",
        history.RevisionTagsView.as_view(),
        name="config-revision-tags",
    ),
    path("configs/diff", history.DiffView.as_view(), name="config-diff"),
    path("configs/<str:config_type>", views.ConfigCollectionView.as_view(), name="config-collection"),
    path("configs/<str:config_type>/<str:name>", views.ConfigObjectView.as_view(), name="config-object"),
    path("machine_pools", machine_pools.MachinePoolListView.as_view(), name="machine-pool-list"),
    path("machine_pools/<str:name>", machine_pools.MachinePoolView.as_view(), name="machine-pool"),
    path("pool", views.PoolListView.as_view(), name="pool-list"),
    path("resources", resources.ResourceListView.as_view(), name="resources"),
    path("resources/<str:name>", resources.ResourceView.as_view(), name="resource"),
    path("profile/settings", profile.ProfileSettingsView.as_view(), name="profile-settings"),
]
