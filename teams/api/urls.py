from django.urls import path

from teams.api import views

urlpatterns = [
    path("teams/departments", views.DepartmentCollectionView.as_view(), name="team-department-collection"),
    path("teams/departments/<str:name>", views.DepartmentView.as_view(), name="team-department"),
    path("teams/departments/<str:name>/admins", views.DepartmentAdminsView.as_view(), name="team-department-admins"),
    path(
        "teams/departments/<str:name>/admins/<str:username>",
        views.DepartmentAdminView.as_view(),
        name="team-department-admin",
    ),
    path("teams/projects", views.ProjectCollectionView.as_view(), name="team-project-collection"),
    path("teams/projects/<str:name>", views.ProjectView.as_view(), name="team-project"),
    path("teams/projects/<str:name>/history", views.ProjectHistoryView.as_view(), name="team-project-history"),
]
