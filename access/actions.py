"""Every action name the portal asks `access.policy` about, and the resource strings it asks them on.

OSMO 6.2's vocabulary (`<resource type>:<Verb>`), in one place: app code names these constants, never
a literal, so a renamed or misspelt action is an import error, not a silent refusal. Patterns (`*` forms)
are here too, for the built-in role documents. Pure: no Django.
"""

from __future__ import annotations

# --- workflows (resource: pool/<name>) ----------------------------------------------------------------
WORKFLOW_CREATE = "workflow:Create"
WORKFLOW_LIST = "workflow:List"
WORKFLOW_READ = "workflow:Read"
WORKFLOW_UPDATE = "workflow:Update"
WORKFLOW_DELETE = "workflow:Delete"
WORKFLOW_CANCEL = "workflow:Cancel"
WORKFLOW_ALL = "workflow:*"

# --- pools ------------------------------------------------------------------------------------------
POOL_LIST = "pool:List"
POOL_MAINTENANCE = "pool:Maintenance"  # submit while a pool is in maintenance (only `*:*` grants it)

# --- configs (resource: config/<type>) ---------------------------------------------------------------
CONFIG_READ = "config:Read"
CONFIG_UPDATE = "config:Update"

# --- identity and the rest of OSMO's vocabulary -------------------------------------------------------
AUTH_LOGIN = "auth:Login"
AUTH_REFRESH = "auth:Refresh"
AUTH_TOKEN = "auth:Token"
PROFILE_READ = "profile:Read"
PROFILE_UPDATE = "profile:Update"
PROFILE_ALL = "profile:*"
RESOURCES_READ = "resources:Read"
USER_LIST = "user:List"
SYSTEM_HEALTH = "system:Health"
SYSTEM_VERSION = "system:Version"
APP_ALL = "app:*"
CREDENTIALS_ALL = "credentials:*"
CREDENTIALS_READ = "credentials:Read"  # list one's credentials, and use them in one's workflows
CREDENTIALS_UPDATE = "credentials:Update"
CREDENTIALS_DELETE = "credentials:Delete"
MCP_ACCESS = "mcp:Access"
INTERNAL_OPERATOR = "internal:Operator"
INTERNAL_LOGGER = "internal:Logger"
INTERNAL_ROUTER = "internal:Router"
EVERYTHING = "*:*"

# --- the portal's own ---------------------------------------------------------------------------------
API_CALL = "api:Call"  # an endpoint that names no action: only roles allowing everything pass
ADMIN_ACCESS = "admin:Access"  # entering /admin/ (audit only: decided by `policy.admin_access`)
ADMIN_VIEW = "admin:View"  # an admin page refused without a recorded decision (audit only)

ADMIN_ACTIONS = (CONFIG_READ, CONFIG_UPDATE)


def pool(name: str) -> str:
    """The resource of a pool: `pool/<name>` (`pool/*`: any pool)."""
    return f"pool/{name}"


def config(config_type: str) -> str:
    """The resource of a config type: `config/<type>`, lower case (`config/pool`, `config/role`, …)."""
    return f"config/{config_type.lower()}"


def workflow(workflow_id: str) -> str:
    return f"workflow/{workflow_id}"


def credentials(username: str) -> str:
    """The resource of a user's credentials: `credentials/<username>`."""
    return f"credentials/{username}"


ANY_POOL = pool("*")

# The resource type an action's resource strings name: workflows live in pools, OSMO's `pool/<name>`.
_RESOURCE_KIND = {"workflow": "pool", "pool": "pool", "config": "config"}


def resource_kind(action: str) -> str:
    """`workflow:Create` → `pool`, `config:Read` → `config`; any other `<type>:<Verb>` → `<type>`."""
    prefix = action.partition(":")[0]
    return _RESOURCE_KIND.get(prefix, prefix)
