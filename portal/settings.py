"""Pool Portal settings: everything configurable comes from the environment (see docs/configuration.md).

The embedded default needs no external service: SQLite under var/, Celery tasks run in-process.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.templatetags.static import static

from portal import deployment
from portal.env import env_bool, env_int, env_list, env_networks, env_ratio, env_str
from portal.version import VERSION

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PORTAL_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
deployment.refuse_debug_in_production(DEBUG)  # PORTAL_ENVIRONMENT=production with DEBUG=true: refused
# Required in production; in development generated once into var/secret_key (portal/deployment.py).
SECRET_KEY = deployment.secret_key(VAR_DIR, DEBUG)
# Fernet keys for secrets at rest (backend tokens, kubeconfigs; portal/secrets.py): the first encrypts, all
# decrypt (rotation). Empty: a key derived from SECRET_KEY.
FIELD_ENCRYPTION_KEYS = [k for k in env_str("FIELD_ENCRYPTION_KEYS", "").split(",") if k.strip()]
# HTTPS (docs/configuration.md): on by default when DEBUG is false; each can be turned off by its variable.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = deployment.hsts_seconds(DEBUG)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_PROXY_SSL_HEADER = deployment.proxy_ssl_header()  # e.g. HTTP_X_FORWARDED_PROTO behind a TLS proxy
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "unfold",
    "unfold.contrib.filters",
    "portal.apps.AdminConfig",  # django.contrib.admin, its ModelAdmins loaded by the URLconf (portal/apps.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "axes",  # password sign-in throttling (access/throttle.py)
    "django_prometheus",  # request, database and cache metrics on /metrics (docs/operations.md)
    "guardian",  # per-object rights (pool owners), consulted only by access.policy (docs/access.md)
    "portal",
    "configs",  # the config store: types, revisions, the one write path (below access and pools)
    "clusters",  # backends, node inventory, the Kubernetes adapter (docs/clusters.md)
    "pools",
    "access",
    "teams",  # departments and projects (docs/teams.md)
    "workflows",
    "usage",  # the portal's memory: usage records, rollups, cost (docs/usage.md), above workflows
    "quotas",  # node pools and team quotas, above workflows (docs/quotas.md)
    "notifications",  # email and Slack messages about workflows (docs/self-service.md#notifications), above quotas
    "selfservice",  # self-service pages, access and pool requests (docs/self-service.md)
]

MIDDLEWARE = [
    # /healthz, /readyz, /metrics: answered before host checks and the HTTPS redirect (probes call pod IPs)
    "portal.ops.endpoints.OpsEndpointsMiddleware",
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "portal.logs.RequestIdMiddleware",  # X-Request-ID in and out; on every log line (portal/logs.py)
    "portal.api_guards.APIGuardMiddleware",  # every error under /api/ leaves as the JSON envelope
    "portal.dbretry.RetryLostConnectionMiddleware",  # a lost database connection: once more, or a 503
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files from gunicorn (after SecurityMiddleware)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "portal.form_limits.OversizedFormMiddleware",  # a page form over the size limit gets the page's error
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # turns a refused sign-in into the 429 lockout response
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
        # Check a reused connection before its first query of a request (or of a watcher's batch): a
        # connection the server dropped is replaced instead of failing the work.
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, with a health check that sends no query when the kept connection has nothing to read
    # (portal/postgresql/base.py): one round trip less per request.
    DATABASES["default"]["ENGINE"] = "portal.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default: several processes (web server, watchers, periodic work) share one file. WAL lets
    # readers run beside the writer; writers wait up to SQLITE_BUSY_TIMEOUT seconds for the lock, and take it
    # when their transaction begins (IMMEDIATE), so a read-then-write transaction never fails at once with
    # "database is locked" when it upgrades. Whatever still times out is retried (portal.dblock).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": env_int("SQLITE_BUSY_TIMEOUT", 20),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    _sqlite_file = str(DATABASES["default"]["NAME"])
    if _sqlite_file and _sqlite_file != ":memory:" and not _sqlite_file.startswith("file:"):
        Path(_sqlite_file).parent.mkdir(parents=True, exist_ok=True)  # `manage.py migrate` on a fresh clone
if env_str("TEST_DATABASE_NAME"):
    # Lets parallel test runs (several checkouts, CI beside a developer) use separate test databases.
    DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# whitenoise serves what `collectstatic` wrote, compressed. No manifest (hashed names): a page rendered
# before collectstatic ran (tests, `make dev`) would fail on every {% static %}; far-future caching is lost.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/login/"  # the self-service sign-in page (local accounts, and SSO when OIDC is on)
LOGIN_REDIRECT_URL = "/"  # the pool catalog

# --- OIDC sign-in (access/oidc/, docs/oidc.md) -------------------------------------------------------
# Off unless OIDC_ISSUER is set (e.g. https://keycloak.example.com/realms/osmo); local accounts always work.
# Endpoints and keys come from the issuer's discovery document, fetched on first use, never at start-up.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_STORE_ID_TOKEN = True  # for id_token_hint at logout
OIDC_TOKEN_USE_BASIC_AUTH = env_bool("OIDC_TOKEN_USE_BASIC_AUTH", False)  # client_secret_basic, else _post
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10)
OIDC_BEARER_AUDIENCES = env_list("OIDC_BEARER_AUDIENCES", [])  # more clients whose tokens the API accepts
OIDC_CLI_CLIENT_ID = env_str("OIDC_CLI_CLIENT_ID", "")  # the osmo CLI's public client (GET /api/auth/login)
OIDC_LOGIN_REDIRECT_URL = env_str("OIDC_LOGIN_REDIRECT_URL", "")  # after sign-in without ?next=; default: home
AUTHENTICATION_BACKENDS = [
    "access.oidc.backend.PortalOIDCBackend",  # inert while OIDC_ISSUER is unset
    "django.contrib.auth.backends.ModelBackend",
]
# --- end OIDC ----------------------------------------------------------------------------------------------

# --- access: API tokens and the policy entry point (access/policy.py, docs/access.md) ---------------------
TOKEN_MAX_LIFETIME_DAYS = env_int("TOKEN_MAX_LIFETIME_DAYS", 90)
# An API token exchanges for a JWT of this lifetime (`POST /api/auth/jwt/access_token`, OSMO's client);
# signed with JWT_SIGNING_KEY, by default a key derived from SECRET_KEY (access/services/jwt_tokens.py).
JWT_LIFETIME_SECONDS = env_int("JWT_LIFETIME_SECONDS", 900)
JWT_SIGNING_KEY = env_str("JWT_SIGNING_KEY", "")
# Token lookups and role rules are cached per process, keyed on the access epoch (access.epoch); an entry
# also expires after this many seconds, the bound for a change made behind Django's back (raw SQL).
ACCESS_CACHE_SECONDS = env_int("ACCESS_CACHE_SECONDS", 60)
# Net allocations between two collections of the garbage collector's youngest generation (700 to 1,000,000;
# CPython's default is 700): portal.gc_tuning, docs/scale.md "Pauses".
GC_YOUNG_THRESHOLD = min(1_000_000, max(700, env_int("GC_YOUNG_THRESHOLD", 10_000)))
# After a request or task that filled a long-lived cache (quota trees, standings), collect the young generations
# and freeze what the process holds (every 30th time after a full collection), so that later full collections skip
# it; at most once per this many seconds per process (0 to 3,600; 0: never): portal.gc_tuning, docs/scale.md.
GC_SETTLE_SECONDS = min(3600, max(0, env_int("GC_SETTLE_SECONDS", 10)))
# Django permission checks (`user.has_perm`) are answered by access.policy too (authenticates nobody).
AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "access.backends.PolicyPermissionBackend"]
# django-guardian stores per-object rights (a pool's owners); access.policy reads them (register_object_right).
# Its backend as guardian documents it; no anonymous user row: anonymous visitors hold no object right.
AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "guardian.backends.ObjectPermissionBackend"]
ANONYMOUS_USER_NAME = None
# --- end access --------------------------------------------------------------------------------------------

# --- sign-in throttling: django-axes (access/throttle.py, docs/access.md) ----------------------------------
# Failed password sign-ins are throttled per (account, address) pair and per address with delays that
# double with each failure past the free ones, up to LOGIN_LOCKOUT_MINUTES; no account is locked from every
# address, so a guesser elsewhere cannot lock its owner out. Axes' backend comes first: a delayed client is
# refused before any password is hashed. Sign-ins without a password (OIDC) are neither counted nor refused.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)  # free failures per account from one address
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 20)  # ... from one address, all accounts
LOGIN_FIRST_DELAY_SECONDS = env_int("LOGIN_FIRST_DELAY_SECONDS", 30)  # then 2x per further failure
LOGIN_LOCKOUT_MINUTES = env_int("LOGIN_LOCKOUT_MINUTES", 15)  # the longest delay
LOGIN_FAILURE_MEMORY_HOURS = env_int("LOGIN_FAILURE_MEMORY_HOURS", 24)  # failures forgotten after this quiet
# Proxies whose X-Forwarded-For is believed (addresses or CIDR networks); none: the peer address counts.
LOGIN_TRUSTED_PROXIES = env_networks("LOGIN_TRUSTED_PROXIES")
_THROTTLE = {
    "LOGIN_FAILURE_LIMIT": (LOGIN_FAILURE_LIMIT, 1_000),
    "LOGIN_ADDRESS_FAILURE_LIMIT": (LOGIN_ADDRESS_FAILURE_LIMIT, 100_000),
    "LOGIN_FIRST_DELAY_SECONDS": (LOGIN_FIRST_DELAY_SECONDS, 3_600),
    "LOGIN_LOCKOUT_MINUTES": (LOGIN_LOCKOUT_MINUTES, 1_440),
    "LOGIN_FAILURE_MEMORY_HOURS": (LOGIN_FAILURE_MEMORY_HOURS, 720),
}
for _name, (_value, _most) in _THROTTLE.items():
    if not 1 <= _value <= _most:
        raise ImproperlyConfigured(f"{_name}={_value}: must be between 1 and {_most}")
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", *AUTHENTICATION_BACKENDS]
AXES_HANDLER = "access.throttle.GrowingDelayHandler"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(hours=LOGIN_FAILURE_MEMORY_HOURS)  # how long failures are remembered
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]  # the pair, and the address
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # refused attempts are not counted: a delay holds
AXES_CLIENT_IP_CALLABLE = "access.throttle.client_address"
AXES_WHITELIST_CALLABLE = "access.throttle.presents_no_password"
AXES_LOCKOUT_CALLABLE = "access.throttle.lockout_response"
AXES_ENABLE_ADMIN = False  # the admin shows lockouts on its own page (access/admin/users.py)
AXES_DISABLE_ACCESS_LOG = True  # no table row per successful sign-in; failures and lockouts are kept
AXES_VERBOSE = False
# --- end sign-in throttling --------------------------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "access.api.authentication.BearerTokenAuthentication",  # portal API tokens (pp_…); see its VERIFIERS
        "rest_framework.authentication.SessionAuthentication",
        # No HTTP Basic: a password on every request would be a free password oracle (and a hash per call).
    ],
    # Every view asks access.policy; a view that declares no policy_action is reachable by osmo-admin only.
    "DEFAULT_PERMISSION_CLASSES": ["access.api.permissions.PolicyPermission"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.error_responses.exception_handler",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # DRF's parsers, refusing NUL anywhere in a body (PostgreSQL cannot store it) with a 400; JSON read
    # through portal.safe_yaml: duplicate keys, NaN and huge integers refused, CONFIG_DOCUMENT_* limits.
    "DEFAULT_PARSER_CLASSES": [
        "portal.parsers.JSONParser",
        "portal.parsers.FormParser",
        "portal.parsers.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Pool Portal API",
    "DESCRIPTION": "OSMO-compatible pool, platform, template and workflow API.",
    "VERSION": VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI assets are served from this app, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Three serializers have a `status` choice field; each set gets its own name in the schema.
    "ENUM_NAME_OVERRIDES": {
        "WorkflowStatusEnum": "workflows.api.serializers.OSMO_STATUSES",
        "TaskStatusEnum": "workflows.api.serializers.TASK_STATUSES",
        "TokenStatusEnum": ["active", "expired", "revoked"],
        "TeamKindEnum": ["department", "project"],  # a quota's team and a fair-share row's: one set, one name
        "MachinePoolStateEnum": "clusters.filters.STATES",  # GET /api/machine_pools: the filter and the answers
    },
    # ConfigBody's branches made distinguishable (pools/api/schema_hooks.py), after spectacular's own hook
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "pools.api.schema_hooks.exact_config_body",
    ],
}

# Celery: with no broker configured, tasks run in-process (the embedded default).
CELERY_TASK_ALWAYS_EAGER = not env_str("CELERY_BROKER_URL", "")
# Eager tasks still borrow a producer from the broker connection pool: the in-memory transport keeps that
# from defaulting to amqp://localhost (and kombu's "No hostname was supplied" on every command's console).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "") or "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600)
# Celery's Django fixup closes every database connection before and after each task unless this is set: a new
# PostgreSQL backend per task (a fork, cold catalog caches, every statement planned cold) cost the database more
# than the task's own queries. Tasks keep their connections as requests do, by DATABASE_CONN_MAX_AGE and the
# health check (portal.celery.task_started); the fixup still closes them after this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Workers log through LOGGING above (LOG_FORMAT, request ids), not through a handler of Celery's own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- watcher replicas (docs/operations.md#watcher-shards; clusters/leases.py): a backend is watched by the one
# replica holding its lease; a lease not renewed for WATCHER_LEASE_SECONDS is free for another replica.
WATCHER_LEASE_SECONDS = env_int("WATCHER_LEASE_SECONDS", 30)
WATCHER_LEASE_RENEW_SECONDS = env_int("WATCHER_LEASE_RENEW_SECONDS", 10)
if not 1 <= WATCHER_LEASE_RENEW_SECONDS * 2 <= WATCHER_LEASE_SECONDS <= 300:
    raise ImproperlyConfigured(
        "WATCHER_LEASE_RENEW_SECONDS must be at least 1 and at most half of WATCHER_LEASE_SECONDS (at most 300)"
    )

# --- operations (docs/operations.md): /readyz and /metrics (portal/ops/) ---------------------------------
READINESS_TIMEOUT_SECONDS = env_int("READINESS_TIMEOUT_SECONDS", 2)  # broker and cluster checks, each call
READINESS_CLUSTER_CACHE_SECONDS = env_int("READINESS_CLUSTER_CACHE_SECONDS", 10)
READINESS_REQUIRES_CLUSTER = env_bool("READINESS_REQUIRES_CLUSTER", True)  # false: reported, never a 503
# /metrics answers peers in these networks, or anyone presenting `Authorization: Bearer <METRICS_TOKEN>`.
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS") or ["127.0.0.1/32", "::1/128"]
METRICS_TOKEN = env_str("METRICS_TOKEN", "")

UNFOLD = {
    "SITE_TITLE": "Pool Portal",
    "SITE_HEADER": "Pool Portal",
    "SITE_SYMBOL": "memory",
    "SHOW_HISTORY": True,
    # the admin home's dashboard (templates/admin/index.html), with the quotas' "Queues" panel
    "DASHBOARD_CALLBACK": "selfservice.dashboard.dashboard",
    # read-only values wrap; quiet text readable (--portal-quiet) (static/portal/admin.css)
    "STYLES": [lambda request: static("portal/admin.css")],
    # a part that scrolls on its own becomes a named tab stop (static/portal/scroll-regions.js)
    "SCRIPTS": [lambda request: static("portal/scroll-regions.js")],
}

# LOG_FORMAT=json: one JSON object per line (time, level, logger, message, request_id, exception); the
# default is plain text for a terminal (docs/operations.md).
LOG_FORMAT = env_str("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: expected text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        # a 4xx is the client's mistake: one line, no traceback (portal.log_filters.ClientErrorsOnOneLine)
        "client_errors_one_line": {"()": "portal.log_filters.ClientErrorsOnOneLine"},
        "request_id": {"()": "portal.logs.RequestIdFilter"},
    },
    "formatters": {"json": {"()": "portal.logs.JsonFormatter"}, "text": {"format": "%(message)s"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["client_errors_one_line", "request_id"],
            "formatter": LOG_FORMAT,
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # axes: failures and lockouts (WARNING) are kept, one INFO line per successful sign-in is not.
    "loggers": {"django.db.backends": {"level": "INFO"}, "axes": {"level": "WARNING"}},
}
# Without a broker, tasks run in the process that sends them, a command line included: Celery's one INFO line
# per task ("Task … succeeded in 0.2s: {…}") and the tasks' own INFO lines ("workflow hello-1 on sim: 1 pod(s)
# created …") would land in the middle of a command's output. Left out there (portal.log_filters.
# InProcessTaskInfoLeftOut); kept where LOG_INPROCESS_TASKS is true (`make dev` sets it for its processes:
# var/web.log and the others). A task's warnings and errors are still logged.
if CELERY_TASK_ALWAYS_EAGER and not env_bool("LOG_INPROCESS_TASKS", False):
    LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}
    LOGGING["filters"]["inprocess_task_info"] = {"()": "portal.log_filters.InProcessTaskInfoLeftOut"}
    LOGGING["handlers"]["console"]["filters"].append("inprocess_task_info")

# Workflows: the most tasks one workflow may have (OSMO's chart uses 100).
WORKFLOW_MAX_TASKS = env_int("WORKFLOW_MAX_TASKS", 100)
# Limits on a submitted spec (portal/safe_yaml.py), checked while it is parsed: bytes before parsing; values
# (keys included) and nesting counted as aliases and `<<` merge keys would expand them.
WORKFLOW_SPEC_MAX_BYTES = env_int("WORKFLOW_SPEC_MAX_BYTES", 512 * 1024)
WORKFLOW_SPEC_MAX_NODES = env_int("WORKFLOW_SPEC_MAX_NODES", 20_000)
WORKFLOW_SPEC_MAX_DEPTH = env_int("WORKFLOW_SPEC_MAX_DEPTH", 32)
# The same for config documents (pools, templates, validations, roles, backends; also kubeconfigs).
CONFIG_DOCUMENT_MAX_BYTES = env_int("CONFIG_DOCUMENT_MAX_BYTES", 4 * 1024 * 1024)
CONFIG_DOCUMENT_MAX_NODES = env_int("CONFIG_DOCUMENT_MAX_NODES", 200_000)
CONFIG_DOCUMENT_MAX_DEPTH = env_int("CONFIG_DOCUMENT_MAX_DEPTH", 64)

# --- workflows: pods, status, timeouts, retries (workflows/lifecycle/, docs/workflows-api.md) ------------
# Every pod the portal creates carries `pool-portal/instance: <PORTAL_INSTANCE>`; the watcher, the
# reconciler and the reaper only look at (and only delete) pods with this portal's value, so several
# portals (production, staging, a developer's laptop) can share one cluster. Use a valid label value.
PORTAL_INSTANCE = env_str("PORTAL_INSTANCE", "default")
# The image of OSMO's `osmo-ctrl` container when its template names none (OSMO's default_ctrl) and the backend's
# `control_image` is empty; empty here too: OSMO's (pools.engine.defaults.OSMO_CTRL_IMAGE). pools.control_image.
OSMO_CTRL_IMAGE = env_str("OSMO_CTRL_IMAGE", "").strip()
WORKFLOW_MAX_RETRIES_PER_TASK = env_int("WORKFLOW_MAX_RETRIES_PER_TASK", 3)  # RESCHEDULE exit actions
# A workflow bound for spot capacity whose exec timeout is above this (or which has none) is warned that a long
# run on spot is likely to be reclaimed (workflows.spot_advice; the portal's choice, not a provider's figure).
WORKFLOW_SPOT_LONG_TIMEOUT_SECONDS = env_int("WORKFLOW_SPOT_LONG_TIMEOUT_SECONDS", 4 * 3600)
WORKFLOW_CREATE_MAX_RETRIES = env_int("WORKFLOW_CREATE_MAX_RETRIES", 8)  # transient cluster errors, with backoff
WORKFLOW_CREATE_BACKOFF_MAX = env_int("WORKFLOW_CREATE_BACKOFF_MAX", 300)  # seconds between two attempts, at most
# Redis redelivers a message nobody acknowledged after this long (a worker killed mid-task: tasks ack late).
# Longer than any task may run and any retry may wait (a retry waits unacknowledged), or a message would be
# delivered twice while still in hand; Redis's default is an hour.
# Each worker looks for such messages every CELERY_UNACKED_RESTORE_SECONDS (kombu's own default sweeps only
# every 10 × 10 s): a message is back in the queue at most visibility timeout + this after its worker died.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int(
        "CELERY_VISIBILITY_TIMEOUT", max(CELERY_TASK_TIME_LIMIT, WORKFLOW_CREATE_BACKOFF_MAX, 300) + 60
    ),
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_SECONDS", 60),
    "unacked_restore_throttle": 1,  # every sweep scans: the interval alone sets the period
}
WORKFLOW_PENDING_GRACE_SECONDS = env_int("WORKFLOW_PENDING_GRACE_SECONDS", 120)  # then the reconciler re-enqueues
WORKFLOW_POD_RETENTION_SECONDS = env_int("WORKFLOW_POD_RETENTION_SECONDS", 300)  # finished workflows' pods, then reaped
# Beat periods (CELERY_BEAT_SCHEDULE below): reconciliation of our pods, timeouts, and the reaper.
WORKFLOW_RECONCILE_SECONDS = env_int("WORKFLOW_RECONCILE_SECONDS", 60)
WORKFLOW_TIMEOUT_CHECK_SECONDS = env_int("WORKFLOW_TIMEOUT_CHECK_SECONDS", 30)
WORKFLOW_REAPER_SECONDS = env_int("WORKFLOW_REAPER_SECONDS", 300)
# Retention (docs/scale.md#retention): a workflow finished more than WORKFLOW_ARCHIVE_DAYS ago (7 to 3650; 0:
# never) is written to a JSON-lines file under WORKFLOW_ARCHIVE_DIR, then removed with its tasks and events, by a
# job every WORKFLOW_ARCHIVE_SECONDS (at most WORKFLOW_ARCHIVE_MAX_PER_RUN a run, WORKFLOW_ARCHIVE_BATCH a file).
# The usage record (rollups, totals, raw attempts) is not touched: it has its own retention (USAGE_*).
WORKFLOW_ARCHIVE_DAYS = env_int("WORKFLOW_ARCHIVE_DAYS", 365)
if WORKFLOW_ARCHIVE_DAYS and not 7 <= WORKFLOW_ARCHIVE_DAYS <= 3650:
    raise ImproperlyConfigured(f"WORKFLOW_ARCHIVE_DAYS={WORKFLOW_ARCHIVE_DAYS}: expected 7 to 3650 days, or 0 (never)")
WORKFLOW_ARCHIVE_DIR = Path(env_str("WORKFLOW_ARCHIVE_DIR", str(VAR_DIR / "archive")))
WORKFLOW_ARCHIVE_SECONDS = max(60, env_int("WORKFLOW_ARCHIVE_SECONDS", 3600))
WORKFLOW_ARCHIVE_BATCH = min(10_000, max(1, env_int("WORKFLOW_ARCHIVE_BATCH", 1000)))
WORKFLOW_ARCHIVE_MAX_PER_RUN = max(1, env_int("WORKFLOW_ARCHIVE_MAX_PER_RUN", 100_000))
# --- end workflows -----------------------------------------------------------------------------------------

# --- Celery beat: the one schedule of periodic jobs, run by `celery beat` or in-process by `manage.py periodic`
# (portal/periodic.py). Each run expires before the next one is due, so a stalled worker never accumulates a
# backlog. The full inventory resync keeps what the watcher (`manage.py watch_cluster`) misses; each backend's
# sync it queues expires as the resync does (clusters.tasks), so queued resyncs never pile up.
INVENTORY_RESYNC_SECONDS = env_int("INVENTORY_RESYNC_SECONDS", 300)
INVENTORY_RESYNC_EXPIRES = max(1, INVENTORY_RESYNC_SECONDS * 4 // 5)
# Delegating backends (quota_scheduler kai/kueue): their scheduler objects are rewritten after every change and,
# in case a sync failed or someone edited them, every this many seconds (quotas.tasks).
QUOTA_SCHEDULER_RESYNC_SECONDS = env_int("QUOTA_SCHEDULER_RESYNC_SECONDS", 600)
# Machine pools (docs/machine-pool-providers.md): every backend's pools are put in step with its provider after
# every change and every this many seconds (drift, deletions missed while it was down); a transient provider
# failure is retried after MACHINE_POOL_RETRY_SECONDS, doubling.
MACHINE_POOL_RECONCILE_SECONDS = env_int("MACHINE_POOL_RECONCILE_SECONDS", 300)
MACHINE_POOL_RECONCILE_EXPIRES = max(1, MACHINE_POOL_RECONCILE_SECONDS * 4 // 5)
MACHINE_POOL_RETRY_SECONDS = env_int("MACHINE_POOL_RETRY_SECONDS", 10)
# The catalog's and the dashboard's capacity of every pool is summed every CAPACITY_SUMMARY_SECONDS (5 to 300)
# rather than per request (pools.services.capacity_summary); a summary older than CAPACITY_SUMMARY_MAX_AGE (the job
# stopped) is not shown: the figures are summed for the request instead.
CAPACITY_SUMMARY_SECONDS = min(300, max(5, env_int("CAPACITY_SUMMARY_SECONDS", 15)))
CAPACITY_SUMMARY_MAX_AGE = 4 * CAPACITY_SUMMARY_SECONDS


def _every(task: str, seconds: int) -> dict:
    return {"task": task, "schedule": seconds, "options": {"expires": max(1, seconds * 4 // 5)}}


# --- quotas: admission (docs/admission.md). A pass per node pool runs on every queue event (submission, a
# workflow finished) and periodically over the node pools with queued work; reclaim never preempts a workflow
# admitted less than QUOTA_MIN_RUNTIME_SECONDS ago. Both are the defaults of a node pool that sets neither
# (NODE_POOL `admission_seconds`, `min_runtime_seconds`); the periodic pass ticks every
# QUOTA_ADMISSION_TICK_SECONDS and visits a node pool once its own period has elapsed since its last pass.
QUOTA_ADMISSION_SECONDS = env_int("QUOTA_ADMISSION_SECONDS", 15)
QUOTA_MIN_RUNTIME_SECONDS = env_int("QUOTA_MIN_RUNTIME_SECONDS", 0)
QUOTA_ADMISSION_TICK_SECONDS = max(1, env_int("QUOTA_ADMISSION_TICK_SECONDS", min(5, QUOTA_ADMISSION_SECONDS)))
# Show every team's quota names and figures to every pool member (default: only to those with config:Read on
# config/node_pool; a researcher sees their own teams and the node pools' totals: teams.quota_visibility.py).
QUOTA_TEAMS_VISIBLE = env_bool("QUOTA_TEAMS_VISIBLE", False)

# --- usage (docs/usage.md): the record's rollups are brought up to date every USAGE_ROLLUP_SECONDS; retention in
# days; a spot node without a recorded spot price is estimated at its on-demand price × USAGE_SPOT_PRICE_RATIO.
USAGE_ROLLUP_SECONDS = env_int("USAGE_ROLLUP_SECONDS", 300)
# Raw records 7 to 3650 days (a negative value would prune every rolled-up attempt at once); rollups at least as
# long as the raw records (a report over older hours reads only the rollups), at most 3650.
USAGE_RAW_RETENTION_DAYS = env_int("USAGE_RAW_RETENTION_DAYS", 90)
if not 7 <= USAGE_RAW_RETENTION_DAYS <= 3650:
    raise ImproperlyConfigured(
        f"USAGE_RAW_RETENTION_DAYS={USAGE_RAW_RETENTION_DAYS}: expected 7 to 3650 days (raw usage records are pruned"
        " this long after they end; the time-based fair share and the what-if read them)"
    )
USAGE_ROLLUP_RETENTION_DAYS = env_int("USAGE_ROLLUP_RETENTION_DAYS", 730)
if not USAGE_RAW_RETENTION_DAYS <= USAGE_ROLLUP_RETENTION_DAYS <= 3650:
    raise ImproperlyConfigured(
        f"USAGE_ROLLUP_RETENTION_DAYS={USAGE_ROLLUP_RETENTION_DAYS}: expected {USAGE_RAW_RETENTION_DAYS} to 3650 days"
        f" (rollups are kept at least as long as the raw records, USAGE_RAW_RETENTION_DAYS={USAGE_RAW_RETENTION_DAYS}:"
        " a report over older hours reads only the rollups)"
    )
USAGE_SPOT_PRICE_RATIO = env_ratio("USAGE_SPOT_PRICE_RATIO", 0.35)
USAGE_PRUNE_SECONDS = 3600

# --- notifications (docs/configuration.md#notifications): email through Django's SMTP backend, Slack through
# incoming webhooks. A workflow that has not started NOTIFY_QUEUE_WAIT_SECONDS after submission is announced once
# (0: never); a delivery that may pass is retried NOTIFY_RETRY_SECONDS later, doubling up to
# NOTIFY_RETRY_MAX_SECONDS, NOTIFY_MAX_ATTEMPTS attempts in all; the sweep runs every NOTIFY_SWEEP_SECONDS.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "")  # none: email notifications are recorded as failed, never sent
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "pool-portal@localhost")
NOTIFY_TIMEOUT_SECONDS = env_int("NOTIFY_TIMEOUT_SECONDS", 10)
EMAIL_TIMEOUT = NOTIFY_TIMEOUT_SECONDS
NOTIFY_QUEUE_WAIT_SECONDS = env_int("NOTIFY_QUEUE_WAIT_SECONDS", 3600)
NOTIFY_RETRY_SECONDS = env_int("NOTIFY_RETRY_SECONDS", 30)
NOTIFY_RETRY_MAX_SECONDS = env_int("NOTIFY_RETRY_MAX_SECONDS", 1800)
NOTIFY_MAX_ATTEMPTS = max(1, env_int("NOTIFY_MAX_ATTEMPTS", 5))
NOTIFY_SWEEP_SECONDS = max(1, env_int("NOTIFY_SWEEP_SECONDS", 60))
PORTAL_URL = env_str("PORTAL_URL", "")  # e.g. https://portal.example.com: links in notifications; none: paths

CELERY_BEAT_SCHEDULE = {
    "inventory-full-resync": _every("clusters.tasks.sync_all_backends", INVENTORY_RESYNC_SECONDS),
    "workflows-reconcile": _every("workflows.tasks.reconcile_workflows", WORKFLOW_RECONCILE_SECONDS),
    "workflows-timeouts": _every("workflows.tasks.enforce_timeouts", WORKFLOW_TIMEOUT_CHECK_SECONDS),
    "workflows-reaper": _every("workflows.tasks.reap_pods", WORKFLOW_REAPER_SECONDS),
    "workflows-archive": _every("workflows.tasks.archive_workflows", WORKFLOW_ARCHIVE_SECONDS),
    "quota-schedulers-resync": _every("quotas.tasks.sync_all_scheduler_objects", QUOTA_SCHEDULER_RESYNC_SECONDS),
    "node-pool-labels": _every("quotas.tasks.label_all_nodes", INVENTORY_RESYNC_SECONDS),
    "quotas-admission": _every("quotas.tasks.admission_all", QUOTA_ADMISSION_TICK_SECONDS),
    "machine-pools-reconcile": _every("clusters.tasks.reconcile_all_machine_pools", MACHINE_POOL_RECONCILE_SECONDS),
    "capacity-summary": _every("pools.tasks.summarize_capacity", CAPACITY_SUMMARY_SECONDS),
    "usage-rollup": _every("usage.tasks.roll_up", USAGE_ROLLUP_SECONDS),
    "usage-prune": _every("usage.tasks.prune", USAGE_PRUNE_SECONDS),
    "usage-deserved-samples": _every("quotas.tasks.sample_deserved", USAGE_ROLLUP_SECONDS),
    "notifications-sweep": _every("notifications.tasks.sweep", NOTIFY_SWEEP_SECONDS),
}
