"""The one factory for Kubernetes API clients: a Backend's connection settings -> an official `ApiClient`.

Three ways to connect (Backend.connection):
* `url`: API URL + bearer token + CA bundle (PEM, kept in memory, no temp file) + verify_tls;
* `kubeconfig`: the content of a kubeconfig (checked by `clusters.kube.kubeconfig`), optional context;
* `in-cluster`: the pod's service account (token and CA under /var/run/secrets/kubernetes.io/...).

Nothing here runs at import time: no `load_kube_config()`, no client built until `connect()` is called,
and the client package itself (≈700 modules, over a second to import) is imported on first use, so
Django processes that never talk to a cluster do not pay for it.
Every request carries a timeout (connect, read); urllib3 retries a failed connect once, no more:
retrying with backoff is the Celery task's job. Secrets never appear in reprs, logs or errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from urllib3.util.retry import Retry

from clusters.kube.errors import KubeError, from_exception
from clusters.kube.kubeconfig import KubeconfigError, read_kubeconfig
from portal.secrets import is_unreadable

if TYPE_CHECKING:
    from kubernetes import client

DEFAULT_TIMEOUT = (5.0, 30.0)  # seconds: connect, read
USER_AGENT = "pool-portal/0.1"
SECRET_FIELDS = ("token", "kubeconfig")


@dataclass(frozen=True)
class ConnectionSettings:
    """Plain data read from a Backend; what `api_client` needs and nothing else."""

    name: str
    connection: str = ""
    api_url: str = ""
    token: str = field(default="", repr=False)
    ca_cert: str = field(default="", repr=False)
    verify_tls: bool = True
    kubeconfig: str = field(default="", repr=False)
    kube_context: str = ""

    @classmethod
    def of(cls, backend: Any) -> ConnectionSettings:
        return cls(**{f.name: getattr(backend, f.name) for f in fields(cls)})


def configuration(settings: ConnectionSettings) -> client.Configuration:
    """A client Configuration for `settings`; raises KubeError (not transient) when they are unusable."""
    from kubernetes import client

    mode = settings.connection
    for secret in SECRET_FIELDS:
        if is_unreadable(getattr(settings, secret)):
            raise KubeError(
                f"backend {settings.name}: the stored {secret} cannot be decrypted with the configured "
                "FIELD_ENCRYPTION_KEYS (or SECRET_KEY, when no key is set): restore the key it was "
                "written with, or set the secret again",
                field=secret,
            )
    if mode == "url":
        if not settings.api_url:
            raise KubeError(f"backend {settings.name}: connection 'url' needs api_url", field="api_url")
        config = client.Configuration(host=settings.api_url.rstrip("/"))
        if settings.token:
            config.api_key = {"authorization": f"Bearer {settings.token.strip()}"}
        if settings.ca_cert:
            config.ca_cert_data = settings.ca_cert
        config.verify_ssl = settings.verify_tls
    elif mode == "kubeconfig":
        config = _from_kubeconfig(settings)
    elif mode == "in-cluster":
        config = _in_cluster(settings)
    else:
        raise KubeError(
            f"backend {settings.name} has no cluster connection configured "
            "(set connection to url, kubeconfig or in-cluster)",
            field="connection",
            value=mode,
        )
    config.retries = Retry(total=1, connect=1, read=0, status=0, redirect=0, other=0, backoff_factor=0.2)
    config.debug = False  # the client's debug log would print the Authorization header
    return config


def _from_kubeconfig(settings: ConnectionSettings) -> client.Configuration:
    from kubernetes import client
    from kubernetes.config import ConfigException, load_kube_config_from_dict

    try:
        document, context = read_kubeconfig(settings.kubeconfig, settings.kube_context)
        config = client.Configuration()
        load_kube_config_from_dict(document, context=context, client_configuration=config, persist_config=False)
    except KubeconfigError as error:
        raise KubeError(f"backend {settings.name}: {error}", field="kubeconfig") from None
    except (ConfigException, ValueError, KeyError, TypeError) as error:
        raise KubeError(
            f"backend {settings.name}: the kubeconfig cannot be used: {type(error).__name__}", field="kubeconfig"
        ) from None
    return config


def _in_cluster(settings: ConnectionSettings) -> client.Configuration:
    from kubernetes import client
    from kubernetes.config import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    config = client.Configuration()
    try:
        InClusterConfigLoader(
            token_filename="/var/run/secrets/kubernetes.io/serviceaccount/token",
            cert_filename="/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        ).load_and_set(config)
    except ConfigException as error:
        raise KubeError(
            f"backend {settings.name}: not running inside a cluster ({error})", field="connection", value="in-cluster"
        ) from None
    return config


def api_client(settings: ConnectionSettings) -> client.ApiClient:
    from kubernetes import client

    api = client.ApiClient(configuration(settings))
    api.user_agent = USER_AGENT
    return api


class KubeClient:
    """An ApiClient for one backend, with timeouts on every call and errors turned into KubeError.

    Lists and watches read raw JSON (`_preload_content=False`): turning 50,000 pods into client model
    objects would cost seconds for nothing, since the adapter only needs plain dicts.
    """

    def __init__(self, api: client.ApiClient, *, name: str = "", timeout: tuple[float, float] = DEFAULT_TIMEOUT):
        self.api = api
        self.name = name
        self.timeout = timeout

    @cached_property
    def core(self) -> client.CoreV1Api:
        from kubernetes import client

        return client.CoreV1Api(self.api)

    @cached_property
    def custom(self) -> client.CustomObjectsApi:
        """Custom resources (the schedulers' queues): see clusters.kube.custom_objects."""
        from kubernetes import client

        return client.CustomObjectsApi(self.api)

    @property
    def host(self) -> str:
        return self.api.configuration.host

    def json(self, doing: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict:
        """Call an API method and return the decoded JSON body; any failure -> KubeError."""
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            response = method(*args, _preload_content=False, **kwargs)
            try:
                return json.loads(response.data)
            finally:
                response.release_conn()
        except Exception as error:  # noqa: BLE001 - every failure becomes one clean KubeError
            raise from_exception(error, doing) from None

    def stream(self, doing: str, method: Callable[..., Any], *args: Any, **kwargs: Any):
        """Open a streaming response (a watch); the caller iterates and closes it."""
        kwargs.setdefault("_request_timeout", self.timeout)
        try:
            return method(*args, _preload_content=False, **kwargs)
        except Exception as error:  # noqa: BLE001
            raise from_exception(error, doing) from None

    def raw(
        self,
        doing: str,
        method: str,
        path: str,
        path_params: dict,
        *,
        query: list[tuple[str, str]] | None = None,
        body: dict | None = None,
        accept: str = "application/json",
    ) -> bytes:
        """A request built by hand, for what the typed methods cannot say: a pod POSTed exactly as given (their
        models refuse quantities as JSON numbers), a log read with `sinceTime`. Returns the body; a status
        outside 2xx, or any other failure -> KubeError."""
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            verb, url, headers, payload, post = self.api.param_serialize(
                method=method,
                resource_path=path,
                path_params=path_params,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.api.call_api(
                verb, url, header_params=headers, body=payload, post_params=post, _request_timeout=self.timeout
            )
            response.read()
            if not 200 <= response.status <= 299:
                raise ApiException.from_response(http_resp=response, body=None, data=None)
            return response.data
        except Exception as error:  # noqa: BLE001 - every failure becomes one clean KubeError
            raise from_exception(error, doing) from None

    def version(self) -> dict:
        from kubernetes import client

        return self.json("reading the server version", client.VersionApi(self.api).get_code)

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def connect(backend: Any, *, timeout: tuple[float, float] = DEFAULT_TIMEOUT) -> KubeClient:
    """A client for `backend` (a Backend row or anything with its connection fields)."""
    settings = backend if isinstance(backend, ConnectionSettings) else ConnectionSettings.of(backend)
    return KubeClient(api_client(settings), name=settings.name, timeout=timeout)
