from access.admin import revisions, roles, users  # noqa: F401  (registers the admin classes)
