from pools.admin import config, machine_pools, nodes_capacity  # noqa: F401  (registers the admin classes)
