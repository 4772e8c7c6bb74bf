from pools.admin import config, inventory, machine_pools  # noqa: F401  (registers the admin classes; then the action)
