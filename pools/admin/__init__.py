from pools.admin import config, revisions  # noqa: F401  (registers the admin classes)
