from pools.admin import config, inventory, revisions  # noqa: F401  (registers the admin classes)
