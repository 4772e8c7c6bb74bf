"""Check kubeconfig content before it is stored (YAML only; importing this never loads the client).

Refused: anything that is not a kubeconfig, an unknown context, and users whose credentials come from
an `exec` or `auth-provider` plugin: those run a program on the portal's host and would need its
binaries and cloud credentials. Use a service-account token (or client certificates) instead.
"""

from __future__ import annotations

from portal.safe_yaml import SafeYAMLError, config_limits, load_yaml


class KubeconfigError(ValueError):
    pass


def _parse(text: str) -> object:
    """The YAML within the config limits; the error names the line, never the content."""
    try:
        return load_yaml(text, config_limits(), "kubeconfig")
    except SafeYAMLError as error:
        raise KubeconfigError(f"kubeconfig is not valid YAML ({_without_values(error)})") from None


def _without_values(error: SafeYAMLError) -> str:
    """The reason, cut before any quoted content (a duplicate key's name is content too)."""
    return error.reason.split("'", 1)[0].split('"', 1)[0].rstrip(" (")


def read_kubeconfig(text: str, context: str = "") -> tuple[dict, str]:
    """(the parsed kubeconfig, the context that will be used). Never echoes the content in errors."""
    data = _parse(text)
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list) or not data["contexts"]:
        raise KubeconfigError("kubeconfig must be a mapping with clusters, contexts and users")
    contexts = {c.get("name"): c.get("context") or {} for c in data["contexts"] if isinstance(c, dict)}
    chosen = context or data.get("current-context") or ""
    if not chosen:
        raise KubeconfigError("kubeconfig has no current-context; name one with kube_context")
    if chosen not in contexts:
        known = ", ".join(sorted(str(name) for name in contexts)) or "none"
        raise KubeconfigError(f"kubeconfig has no context {chosen!r} (contexts: {known})")
    clusters = {c.get("name"): c.get("cluster") or {} for c in data.get("clusters") or [] if isinstance(c, dict)}
    cluster_name = contexts[chosen].get("cluster")
    if cluster_name not in clusters or not clusters[cluster_name].get("server"):
        raise KubeconfigError(f"kubeconfig context {chosen!r} names no cluster with a server URL")
    users = {u.get("name"): u.get("user") or {} for u in data.get("users") or [] if isinstance(u, dict)}
    user = users.get(contexts[chosen].get("user"), {})
    for plugin in ("exec", "auth-provider"):
        if isinstance(user, dict) and user.get(plugin):
            raise KubeconfigError(
                f"kubeconfig user uses an {plugin} plugin, which would run a program on the "
                "portal's host; use a service-account token or client certificates"
            )
    return data, chosen
