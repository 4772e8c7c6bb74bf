from access.admin import roles, users  # noqa: F401  (registers the admin classes)
