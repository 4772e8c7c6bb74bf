"""What a simulated container prints and how it exits: its own command, not a canned log.

The container's `command` and `args` (Kubernetes' `$(VAR)` expanded from its `env`) are read as a real node
would run them. `sh -c "…"` (or bash) is read for simple scripts: commands joined by `;` and `&&`, words as
`shlex` splits them, `$VAR` and `${VAR}` from the environment. What runs:

- `echo`, `printf` (`%s`, `%d` and `\\n`), `true`, `false`, `exit N`, `sleep N` (prints nothing);
- `hostname` (the pod's `spec.hostname`, else its name), `env` and `printenv [NAME]` (the container's environment);
- `nvidia-smi`: a table of the GPUs the container requests (`nvidia.com/gpu`), "No devices were found" without;
- files: `> FILE` and `>> FILE` after a command write what it prints to FILE, `cat FILE` prints it, `mkdir`
  makes nothing (directories exist). The files are the pod's volumes' (kubesim.volumes: a PersistentVolumeClaim's
  outlive the pod, so a checkpoint written by one attempt's preStop hook is read by the next attempt); without
  them (`files=None`) writes last for the one run.

Anything else is not run: the log names the command line with a `[simulated]` marker (never made-up output),
and the run counts as exit 0. A pure function of the pod and its files: the kubelet runs it as the container
starts and keeps what it printed (the exit code, when no annotation sets one; the pod log's lines, podlogs.py).
"""

from __future__ import annotations

import contextlib
import re
import shlex
from dataclasses import dataclass

from .services import hostname

MARKER = "[simulated]"
SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env sh"}
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Outcome:
    lines: tuple[str, ...]  # printed as the container starts
    exit_code: int
    unknown: str | None = None  # the command line the simulation did not run, if any
    seconds: float = 0.0  # how long it takes: its `sleep`s (a preStop hook lasts that long, within the grace period)


class ScratchFiles:
    """Files that last for one run: what `cat` reads when no volumes are given."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, path: str, text: str, append: bool) -> None:
        self.files[path] = (self.files.get(path, "") if append else "") + text


def container_of(pod: dict, name: str) -> dict:
    return next((c for c in (pod.get("spec") or {}).get("containers") or () if c.get("name") == name), {})


def pre_stop(container: dict) -> list | None:
    """The command of the container's preStop exec hook (``lifecycle.preStop.exec.command``), if it has one."""
    hook = (((container.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command")
    return list(hook) if hook else None


def run_pre_stop(pod: dict, container: dict, files=None) -> Outcome | None:
    """What the container's preStop hook prints, as the kubelet runs it in the container (its environment)."""
    command = pre_stop(container)
    if command is None:
        return None
    return run(pod, {**container, "command": command, "args": []}, files)


def run(pod: dict, container: dict, files=None) -> Outcome:
    """What `container` of `pod` prints and its exit code; `files` (read(path), write(path, text, append)): the
    files it sees (kubesim.volumes), else scratch ones."""
    files = files if files is not None else ScratchFiles()
    env = _environment(pod, container)
    argv = [_K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(word)) for word in _argv(container)]
    if not argv:
        image = container.get("image") or "the image"
        return Outcome((f"{MARKER} {image}: the image's own command, not run here",), 0, image)
    if argv[0] in SHELLS and len(argv) >= 3 and argv[1] == "-c":
        return _script(argv[2], pod, container, env, files)
    return _commands([[(argv, None)]], pod, container, env, files)


def _argv(container: dict) -> list:
    return [*(container.get("command") or ()), *(container.get("args") or ())]


def _environment(pod: dict, container: dict) -> dict[str, str]:
    name = (pod.get("metadata") or {}).get("name", "")
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": name}
    for variable in container.get("env") or ():
        if "value" in variable:
            env[variable["name"]] = str(variable["value"])
    return env


def _redirect(words: list[str]) -> tuple[list[str], tuple[str, bool] | None] | None:
    """The command's words and where its output goes (`> FILE`, `>> FILE`: path, append); None: not read here."""
    for index, word in enumerate(words):
        if not word.startswith(">"):
            if ">" in word:
                return None
            continue
        append = word.startswith(">>")
        target = word[2 if append else 1 :] or (words[index + 1] if index + 1 < len(words) else "")
        rest = words[index + (1 if word[2 if append else 1 :] else 2) :]
        if not target or rest:
            return None
        return words[:index], (target, append)
    return words, None


def _script(text: str, pod: dict, container: dict, env: dict[str, str], files) -> Outcome:
    """A `sh -c` script: `;`-separated lists of `&&`-joined commands; anything fancier is not run."""
    if re.search(r"[|<`]|\$\(|\|\||\bif\b|\bfor\b|\bwhile\b", text):
        return _unknown(text, [])
    lists = []
    for part in text.replace("\n", ";").split(";"):
        chain = []
        for command in part.split("&&"):
            expanded = _SHELL_VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), command)
            try:
                words = shlex.split(expanded)
            except ValueError:
                return _unknown(text, [])
            redirected = _redirect(words)
            if redirected is None:
                return _unknown(text, [])
            if redirected[0]:
                chain.append(redirected)
        if chain:
            lists.append(chain)
    return _commands(lists, pod, container, env, files, whole=text)


def _commands(lists: list, pod: dict, container: dict, env: dict[str, str], files, whole: str | None = None) -> Outcome:
    printed: list[str] = []
    code, seconds = 0, 0.0
    for chain in lists:
        for words, redirect in chain:
            name, args = words[0], words[1:]
            if name == "exit":
                return Outcome(tuple(printed), int(args[0]) if args and args[0].isdigit() else code, seconds=seconds)
            known = _known(name, args, pod, container, env, files)
            if known is None:
                return _unknown(whole or shlex.join(words), printed)
            lines, code = known
            if redirect is not None:
                files.write(redirect[0], "".join(f"{line}\n" for line in lines), redirect[1])
            else:
                printed.extend(lines)
            if name == "sleep" and args:
                with contextlib.suppress(ValueError):
                    seconds += max(0.0, float(args[0]))
            if code != 0:
                break  # `&&` stops; `;` goes on with the next list
    return Outcome(tuple(printed), code, seconds=seconds)


def _unknown(command: str, printed: list[str]) -> Outcome:
    known = "echo, printf, sleep, hostname, env, cat, nvidia-smi"
    line = f"{MARKER} {command}: not run here (the simulated cluster runs {known})"
    return Outcome((*printed, line), 0, command)


def _known(name: str, args: list[str], pod: dict, container: dict, env: dict[str, str], files):
    """(lines, exit code) of a command the simulation knows, None for any other."""
    if name == "cat" and args:
        lines, code = [], 0
        for path in args:
            text = files.read(path)
            if text is None:
                lines.append(f"cat: {path}: No such file or directory")
                code = 1
            else:
                lines.extend(text.splitlines())
        return lines, code
    if name == "mkdir":
        return [], 0
    if name == "echo":
        newline = not (args and args[0] == "-n")
        text = " ".join(args[1:] if not newline else args)
        return text.split("\n") if newline or text else [], 0
    if name == "printf":
        return _printf(args), 0
    if name in ("true", ":", "sleep"):
        return [], 0
    if name == "false":
        return [], 1
    if name == "hostname":
        return [hostname(pod)], 0
    if name in ("env", "printenv") and not args:
        return [f"{key}={value}" for key, value in env.items()], 0
    if name == "printenv":
        found = [env[arg] for arg in args if arg in env]
        return found, 0 if len(found) == len(args) else 1
    if name in ("nvidia-smi", "/usr/bin/nvidia-smi") and not args:
        return _nvidia_smi(pod, container)
    return None


def _printf(args: list[str]) -> list[str]:
    if not args:
        return []
    pattern, values = args[0].replace("\\n", "\n").replace("\\t", "\t"), list(args[1:])
    text = re.sub(r"%[sd]", lambda _: values.pop(0) if values else "", pattern).replace("%%", "%")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _nvidia_smi(pod: dict, container: dict) -> tuple[list[str], int]:
    resources = container.get("resources") or {}
    wanted = (resources.get("limits") or {}).get("nvidia.com/gpu") or (resources.get("requests") or {}).get(
        "nvidia.com/gpu"
    )
    count = int(wanted) if str(wanted or "").isdigit() else 0
    if count == 0:
        return ["No devices were found"], 6
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    product = str(selector.get("nvidia.com/gpu.product") or "NVIDIA GPU (simulated)").replace("-", " ")[:29]
    rule = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        rule.replace("-+-", "---"),
        f"| {'NVIDIA-SMI 550.54.15 (simulated)     Driver Version: 550.54.15      CUDA Version: 12.4':<87} |",
        rule.replace("+", "|", 1)[:-1] + "+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|" + rule[1:-1].replace("-", "=") + "|",
    ]
    for gpu in range(count):
        lines += [
            f"| {gpu:>3}  {product:<29}  On  |   00000000:{0x18 + gpu:02X}:00.0 Off |                    0 |",
            "| N/A   34C    P0             71W /  700W |       0MiB /  81559MiB |      0%      Default |",
            rule,
        ]
    return lines, 0
