from django.urls import path

from usage.api import views

urlpatterns = [path("usage/report", views.UsageReportView.as_view(), name="usage-report")]
