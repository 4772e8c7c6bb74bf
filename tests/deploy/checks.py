"""The invariants of a rendered portal overlay (issue #15), each a function from objects to problems."""

from __future__ import annotations

import re

from tests.deploy.manifests import command_line, containers, name_of, of_kind, pod_spec, running, settings_variables

SECRET_VARIABLES = {
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "FIELD_ENCRYPTION_KEYS",
    "OIDC_CLIENT_SECRET",
    "JWT_SIGNING_KEY",
}
SECRET_LOOKING = re.compile(r"PASSWORD|SECRET|TOKEN|_KEY$|_KEYS$")
CREDENTIALS_IN_URL = re.compile(r"://[^/@\s]*:[^/@\s]*@")  # scheme://user:password@host
SECRET_NAME = "pool-portal-secrets"
CONFIG_EXTRAS = {"PYTHONUNBUFFERED"}  # read by Python itself, not by the settings


def singleton_problems(objects, pattern: str, what: str) -> list[str]:
    """Exactly one Deployment runs `pattern`, with one replica and the Recreate strategy."""
    found = [obj for obj in running(objects, pattern) if obj["kind"] == "Deployment"]
    if len(found) != 1:
        return [f"{what}: {len(found)} Deployments run it, expected exactly one"]
    deployment = found[0]
    problems = []
    if deployment["spec"].get("replicas") != 1:
        problems.append(f"{what}: replicas {deployment['spec'].get('replicas')}, expected 1")
    if (deployment["spec"].get("strategy") or {}).get("type") != "Recreate":
        problems.append(f"{what}: strategy {deployment['spec'].get('strategy')}, expected Recreate")
    scaled = {hpa["spec"]["scaleTargetRef"]["name"] for hpa in of_kind(objects, "HorizontalPodAutoscaler")}
    if deployment["metadata"]["name"] in scaled:
        problems.append(f"{what}: an autoscaler scales it")
    return problems


def sharded_problems(objects, pattern: str, what: str) -> list[str]:
    """Exactly one Deployment runs the watcher `pattern`, with two replicas or more (they share the backends
    through leases: clusters.leases) rolled out by RollingUpdate without taking one away first."""
    found = [obj for obj in running(objects, pattern) if obj["kind"] == "Deployment"]
    if len(found) != 1:
        return [f"{what}: {len(found)} Deployments run it, expected exactly one"]
    spec = found[0]["spec"]
    problems = []
    if not isinstance(spec.get("replicas"), int) or spec["replicas"] < 2:
        problems.append(f"{what}: replicas {spec.get('replicas')}, expected 2 or more")
    strategy = spec.get("strategy") or {}
    if strategy.get("type") != "RollingUpdate" or (strategy.get("rollingUpdate") or {}).get("maxUnavailable") != 0:
        problems.append(f"{what}: strategy {strategy}, expected RollingUpdate with maxUnavailable 0")
    return problems


def probe_problems(objects) -> list[str]:
    """Every long-running container has liveness and readiness probes; the web's are HTTP /healthz, /readyz."""
    problems = []
    for obj in of_kind(objects, "Deployment"):
        for container in containers(obj, init=False):
            for probe in ("livenessProbe", "readinessProbe"):
                if not container.get(probe):
                    problems.append(f"{name_of(obj)} {container['name']}: no {probe}")
    web = running(objects, r"^gunicorn portal\.wsgi")
    if len(web) != 1:
        return [*problems, f"{len(web)} Deployments run gunicorn portal.wsgi, expected one"]
    container = next(containers(web[0], init=False))
    allowed = set(next(iter(of_kind(objects, "ConfigMap")), {}).get("data", {}).get("ALLOWED_HOSTS", "").split(","))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = (container.get(probe) or {}).get("httpGet") or {}
        if get.get("path") != path:
            problems.append(f"web {probe}: HTTP path {get.get('path')}, expected {path}")
        hosts = [h["value"] for h in get.get("httpHeaders") or () if h["name"].lower() == "host"]
        if not hosts or hosts[0] not in allowed:  # else Django answers 400 and the probe fails
            problems.append(f"web {probe}: Host {hosts} is not in ALLOWED_HOSTS")
    return problems


WATCHERS = ("watch_cluster", "watch_workflows")


def watcher_probe_problems(objects) -> list[str]:
    """Each watcher's startup, liveness and readiness probes run `watcher_health` on its own heartbeat, of
    its own replica (`--this-replica`: another replica's stale backend must not restart this pod);
    liveness (and startup) pass without a database (the watcher waits for it), readiness does not."""
    problems = []
    for watcher in WATCHERS:
        for obj in running(objects, rf"^python manage\.py {watcher}\b"):
            container = next(containers(obj, init=False))
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                command = ((container.get(probe) or {}).get("exec") or {}).get("command") or []
                expected = ["python", "manage.py", "watcher_health", watcher]
                if command[:4] != expected:
                    problems.append(f"{watcher} {probe}: runs {command[:4]}, expected {expected}")
                    continue
                if "--this-replica" not in command:
                    problems.append(f"{watcher} {probe}: --this-replica missing (it would fail on other replicas)")
                lenient = "--ok-without-database" in command
                if lenient != (probe != "readinessProbe"):
                    problems.append(f"{watcher} {probe}: --ok-without-database {'set' if lenient else 'missing'}")
    return problems


def resource_problems(objects) -> list[str]:
    problems = []
    for obj in objects:
        for container in containers(obj):
            resources = container.get("resources") or {}
            for bound in ("requests", "limits"):
                missing = {"cpu", "memory"} - set(resources.get(bound) or {})
                if missing:
                    problems.append(f"{name_of(obj)} {container['name']}: no {bound} for {', '.join(sorted(missing))}")
    return problems


def secret_problems(objects) -> list[str]:
    """No secret value anywhere: no Secret with data, no literal secret variable, no password in a URL."""
    secrets = of_kind(objects, "Secret")
    problems = [f"{name_of(obj)} carries values" for obj in secrets if obj.get("data") or obj.get("stringData")]
    for obj in of_kind(objects, "ConfigMap"):
        for key, value in (obj.get("data") or {}).items():
            if key in SECRET_VARIABLES or SECRET_LOOKING.search(key) or CREDENTIALS_IN_URL.search(str(value)):
                problems.append(f"{name_of(obj)}: {key} belongs in the Secret")
    for obj in objects:
        for container in containers(obj):
            for env in container.get("env") or ():
                literal = "value" in env
                if literal and (env["name"] in SECRET_VARIABLES or SECRET_LOOKING.search(env["name"])):
                    problems.append(f"{name_of(obj)} {container['name']}: {env['name']} has a literal value")
                if literal and CREDENTIALS_IN_URL.search(str(env["value"])):
                    problems.append(f"{name_of(obj)} {container['name']}: {env['name']} holds a password")
            refs = [s["secretRef"]["name"] for s in container.get("envFrom") or () if "secretRef" in s]
            if refs != [SECRET_NAME]:
                problems.append(f"{name_of(obj)} {container['name']}: secrets from {refs}, expected [{SECRET_NAME}]")
    return problems


def config_problems(objects) -> list[str]:
    """The ConfigMap names only variables the settings read (a misspelt name would be ignored silently)."""
    known = settings_variables() | CONFIG_EXTRAS
    maps = of_kind(objects, "ConfigMap")
    if len(maps) != 1:
        return [f"{len(maps)} ConfigMaps, expected the one pool-portal-config"]
    return [f"ConfigMap: {key} is read by nothing" for key in sorted(set(maps[0]["data"]) - known)]


def migration_problems(objects) -> list[str]:
    jobs = [obj for obj in running(objects, r"manage\.py migrate --noinput$") if obj["kind"] == "Job"]
    problems = [] if len(jobs) == 1 else [f"{len(jobs)} migrate Jobs, expected one"]
    for obj in of_kind(objects, "Deployment"):
        waits = [c for c in (pod_spec(obj).get("initContainers") or ()) if "migrate --check" in command_line(c)]
        if not waits:
            problems.append(f"{name_of(obj)}: does not wait for the migrations")
    return problems


def storage_problems(objects) -> list[str]:
    """Every claim a pod mounts is in the manifests, and the workers (who run retention's archive job) write
    WORKFLOW_ARCHIVE_DIR on a persistent volume they share, not on the image's read-only files."""
    claims = {obj["metadata"]["name"] for obj in of_kind(objects, "PersistentVolumeClaim")}
    problems = []
    for obj in objects:
        for volume in (pod_spec(obj) or {}).get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in claims:
                problems.append(f"{name_of(obj)}: volume {volume['name']} names claim {claim}, which is not there")
    for obj in running(objects, r"^celery -A portal worker"):
        problems += _archive_problems(obj)
    return problems


def _archive_problems(obj: dict) -> list[str]:
    persistent = {
        v["name"] for v in pod_spec(obj).get("volumes") or () if (v.get("persistentVolumeClaim") or {}).get("claimName")
    }
    for container in containers(obj, init=False):
        directory = next(
            (e.get("value") for e in container.get("env") or () if e["name"] == "WORKFLOW_ARCHIVE_DIR"), None
        )
        if directory is None:
            return [f"{name_of(obj)}: WORKFLOW_ARCHIVE_DIR is not set (the default lies in the read-only image)"]
        mounted = {m["mountPath"] for m in container.get("volumeMounts") or () if m["name"] in persistent}
        if not any(directory == path or directory.startswith(path.rstrip("/") + "/") for path in mounted):
            return [f"{name_of(obj)}: WORKFLOW_ARCHIVE_DIR {directory} is on no persistent volume"]
    return []


def selection_problems(objects) -> list[str]:
    """PDBs, HPAs and Services point at Deployments that exist; web and workers have a PDB and an HPA."""
    deployments = {obj["metadata"]["name"]: obj for obj in of_kind(objects, "Deployment")}
    problems = []

    def selected(selector: dict) -> list[str]:
        return [
            name
            for name, obj in deployments.items()
            if selector and selector.items() <= obj["spec"]["template"]["metadata"]["labels"].items()
        ]

    budgets = {}
    for pdb in of_kind(objects, "PodDisruptionBudget"):
        names = selected(pdb["spec"]["selector"].get("matchLabels") or {})
        if len(names) != 1:
            problems.append(f"{name_of(pdb)} selects {names}, expected one Deployment")
        budgets.update(dict.fromkeys(names))
    for service in of_kind(objects, "Service"):
        if not selected(service["spec"].get("selector") or {}):
            problems.append(f"{name_of(service)} selects no Deployment")
    scaled = set()
    for hpa in of_kind(objects, "HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        if target["kind"] != "Deployment" or target["name"] not in deployments:
            problems.append(f"{name_of(hpa)} scales {target['kind']} {target['name']}, which does not exist")
        scaled.add(target["name"])
        if "replicas" in deployments.get(target["name"], {}).get("spec", {}):
            problems.append(f"{name_of(hpa)}: Deployment {target['name']} sets replicas (an apply resets the HPA's)")
    for pattern, what in ((r"^gunicorn portal\.wsgi", "web"), (r"^celery -A portal worker", "worker")):
        for obj in running(objects, pattern):
            if obj["metadata"]["name"] not in budgets:
                problems.append(f"{what}: no PodDisruptionBudget")
            if obj["metadata"]["name"] not in scaled:
                problems.append(f"{what}: no HorizontalPodAutoscaler")
    return problems


def security_problems(objects) -> list[str]:
    problems = []
    for obj in objects:
        spec = pod_spec(obj)
        if spec is None:
            continue
        pod_context = spec.get("securityContext") or {}
        if not pod_context.get("runAsNonRoot"):
            problems.append(f"{name_of(obj)}: not runAsNonRoot")
        if (pod_context.get("seccompProfile") or {}).get("type") != "RuntimeDefault":  # the restricted standard
            problems.append(f"{name_of(obj)}: no RuntimeDefault seccomp profile")
        if spec.get("serviceAccountName") != "pool-portal":
            problems.append(f"{name_of(obj)}: service account {spec.get('serviceAccountName')}")
        for container in containers(obj):
            context = container.get("securityContext") or {}
            if not context.get("readOnlyRootFilesystem") or context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{name_of(obj)} {container['name']}: writable root or privilege escalation")
            if (context.get("capabilities") or {}).get("drop") != ["ALL"]:
                problems.append(f"{name_of(obj)} {container['name']}: capabilities not all dropped")
            image = container.get("image", "")
            if ":" not in image.rsplit("/", 1)[-1]:
                problems.append(f"{name_of(obj)} {container['name']}: image {image!r} has no tag (overlay `images:`)")
    for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
        problems += [f"{name_of(obj)}: the portal needs no rights in its own cluster" for obj in of_kind(objects, kind)]
    return problems
