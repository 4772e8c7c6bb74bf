from pools.admin import config, inventory  # noqa: F401  (registers the admin classes)
