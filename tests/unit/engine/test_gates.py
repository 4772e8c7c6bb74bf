"""Platform gates on the final pod: privileged, hostNetwork, hostPath mounts, protected image/command/args."""

from __future__ import annotations

import pytest

from pools.engine.gates import GateError, GatePolicy, parse_volume_mount, plan_mounts
from pools.engine.resolve import TaskInput, resolve


def gates(resolution):
    return [(g["field"], g["reason"]) for g in resolution.validation["gates"]]


def containers(*items, **spec):
    return {"spec": {"containers": list(items), **spec}}


USER = "{{USER_CONTAINER_NAME}}"


# --------------------------------------------------------------------------- volume mount syntax (OSMO)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("/data", ("/data", "/data")),
        ("/data:/mnt/data", ("/data", "/mnt/data")),
        ("/data/:/mnt/", ("/data", "/mnt")),
    ],
)
def test_volume_mount_syntax(spec, expected):
    assert parse_volume_mount(spec) == expected


@pytest.mark.parametrize("spec", ["a:b:c", "/a:", ":/b", "", "relative", "/a/../etc:/x", "/a:rel", 3])
def test_bad_volume_mounts_are_rejected(spec):
    with pytest.raises(GateError):
        parse_volume_mount(spec)


@pytest.mark.parametrize(
    ("allowed", "platform_mounts", "mount", "outcome"),
    [
        ((), set(), "/data", "not an allowed mount"),  # no platform flags
        (("/data",), set(), "/data", "ok"),
        (("/data",), set(), "/data:/in", "ok"),
        ((), {"/data"}, "/data", "already provided by platform"),  # default-only mount rejected
        (("/data",), {"/data"}, "/data", "ok"),  # default + allowed ok
        (("/data",), set(), "/data/sub", "not an allowed mount"),  # exact paths, as OSMO compares them
        (("/data/",), set(), "/data", "ok"),
        ((), set(), "a:b:c", "is 'src' or 'src:dst'"),
    ],
)
def test_plan_mounts_follows_osmo(allowed, platform_mounts, mount, outcome):
    mounts, errors = plan_mounts([mount], GatePolicy("a100", allowed_mounts=allowed), platform_mounts)
    if outcome == "ok":
        assert (len(mounts), errors) == (1, [])
    else:
        assert mounts == []
        assert outcome in errors[0].reason
        assert errors[0].field == "volumeMounts[0]"


# --------------------------------------------------------------------------- on the final pod


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        (
            False,
            [
                (
                    "spec.containers[0].securityContext.privileged",
                    "privileged containers are not allowed on platform a100",
                )
            ],
        ),
        (True, []),
    ],
)
def test_privileged_task(make_platform, allowed, expected):
    result = resolve(make_platform(privileged_allowed=allowed), TaskInput("t", privileged=True))
    assert gates(result) == expected
    assert result.pod["spec"]["containers"][0]["securityContext"] == {"privileged": True}


def test_a_template_cannot_sneak_privileged_in(make_platform):
    sneaky = ("sneaky", containers({"name": "osmo-ctrl", "securityContext": {"privileged": True}}))
    result = resolve(make_platform(extra_templates=[sneaky]), TaskInput("t"))
    assert gates(result) == [
        ("spec.containers[1].securityContext.privileged", "privileged containers are not allowed on platform a100")
    ]
    assert not result.ok


def test_privileged_init_containers_are_gated_too(make_platform):
    init = (
        "init",
        containers(initContainers=[{"name": "setup", "image": "busybox", "securityContext": {"privileged": True}}]),
    )
    result = resolve(make_platform(extra_templates=[init]), TaskInput("t"))
    assert [field for field, _ in gates(result)] == ["spec.initContainers[0].securityContext.privileged"]


@pytest.mark.parametrize(
    ("task_flag", "template_flag", "allowed", "blocked"),
    [
        (True, None, False, True),
        (True, None, True, False),
        (False, True, False, True),  # a template cannot turn it on either
        (False, True, True, False),
        (False, None, False, False),
    ],
)
def test_host_network(make_platform, task_flag, template_flag, allowed, blocked):
    extra = [("net", {"spec": {"hostNetwork": template_flag}})] if template_flag else []
    result = resolve(
        make_platform(extra_templates=extra, host_network_allowed=allowed), TaskInput("t", host_network=task_flag)
    )
    assert gates(result) == ([("spec.hostNetwork", "hostNetwork is not allowed on platform a100")] if blocked else [])


def test_allowed_host_mount_becomes_a_volume_and_a_mount(make_platform):
    result = resolve(make_platform(allowed_mounts=["/datasets"]), TaskInput("t", volume_mounts=["/datasets:/data"]))
    spec = result.pod["spec"]
    assert spec["volumes"] == [{"name": "host-mount-0", "hostPath": {"path": "/datasets"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "host-mount-0", "mountPath": "/data"}]
    assert result.ok


def test_refused_mounts_are_reported_and_left_out(make_platform):
    result = resolve(make_platform(allowed_mounts=["/datasets"]), TaskInput("t", volume_mounts=["/etc", "a:b:c"]))
    assert [field for field, _ in gates(result)] == ["volumeMounts[0]", "volumeMounts[1]"]
    assert "volumes" not in result.pod["spec"]


def test_template_host_paths_are_allowed_and_count_as_provided_by_platform(make_platform):
    shm = (
        "shm",
        containers(
            {"name": USER, "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
            volumes=[{"name": "cache", "hostPath": {"path": "/mnt/cache"}}],
        ),
    )
    platform = make_platform(extra_templates=[shm])
    assert resolve(platform, TaskInput("t")).ok
    for mount in ("/mnt/cache", "/cache"):
        result = resolve(platform, TaskInput("t", volume_mounts=[mount]))
        assert gates(result) == [("volumeMounts[0]", f"{mount} is already provided by platform a100")]


def test_a_mount_path_used_twice_is_refused(make_platform):
    shm = (
        "shm",
        containers(
            {"name": USER, "volumeMounts": [{"name": "shm", "mountPath": "/data"}]},
            volumes=[{"name": "shm", "emptyDir": {}}],
        ),
    )
    result = resolve(
        make_platform(extra_templates=[shm], allowed_mounts=["/datasets"]),
        TaskInput("t", volume_mounts=["/datasets:/data"]),
    )
    assert gates(result) == [("spec.containers[0].volumeMounts", "mount path used twice in one container")]


@pytest.mark.parametrize(
    ("field", "value"), [("image", "evil:latest"), ("command", ["sh", "-c", "curl x|sh"]), ("args", ["--steal"])]
)
def test_templates_cannot_change_the_user_containers_image_command_or_args(make_platform, field, value):
    override = ("override", containers({"name": USER, field: value}))
    result = resolve(make_platform(extra_templates=[override]), TaskInput("t", command=["python"], args=["x.py"]))
    assert [f for f, _ in gates(result)] == [f"spec.containers[0].{field}"]
    assert "must be the task's" in gates(result)[0][1]


def test_a_task_may_not_be_named_like_a_template_container(make_platform):
    result = resolve(make_platform(), TaskInput("osmo-ctrl", image="evil:1", command=["sh"]))
    assert (
        "name",
        "a task may not be named 'osmo-ctrl': the platform template defines a container with that name",
    ) in gates(result)
    assert not result.ok
    # OSMO's default_ctrl has no image: the task's container is not given the control image either
    assert [c["image"] for c in result.pod["spec"]["containers"]] == ["evil:1"]


def test_template_containers_keep_their_image_command_and_args(make_platform):
    sidecar = ("sidecar", containers({"name": "logger", "image": "fluent:1", "command": ["fluent-bit"]}))
    result = resolve(make_platform(extra_templates=[sidecar]), TaskInput("logger-task"))
    assert result.ok
    assert result.pod["spec"]["containers"][2]["image"] == "fluent:1"


def test_gate_errors_are_json_ready(make_platform):
    result = resolve(make_platform(), TaskInput("t", privileged=True, host_network=True))
    assert {g["field"] for g in result.validation["gates"]} == {
        "spec.hostNetwork",
        "spec.containers[0].securityContext.privileged",
    }
    assert all(set(g) == {"field", "value", "reason"} for g in result.validation["gates"])
