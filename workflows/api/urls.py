from django.urls import path

from workflows.api import logs, tasks, views

urlpatterns = [
    path("pool/<path:pool>/workflow", views.SubmitView.as_view(), name="workflow-submit"),
    path("workflow", views.WorkflowListView.as_view(), name="workflow-list"),
    path("task", tasks.TaskListView.as_view(), name="task-list"),
    path("workflow/<str:workflow_id>", views.WorkflowView.as_view(), name="workflow-detail"),
    path("workflow/<str:workflow_id>/spec", views.WorkflowSpecView.as_view(), name="workflow-spec"),
    path("workflow/<str:workflow_id>/events", views.WorkflowEventsView.as_view(), name="workflow-events"),
    path("workflow/<str:workflow_id>/logs", logs.WorkflowLogsView.as_view(), name="workflow-logs"),
    path("workflow/<str:workflow_id>/task/<str:task_name>/logs", logs.TaskLogView.as_view(), name="task-logs"),
    path("workflow/<str:workflow_id>/cancel", views.WorkflowCancelView.as_view(), name="workflow-cancel"),
]
