"""The files simulated containers write and read (kubesim.commands: `> FILE`, `>> FILE`, `cat FILE`), on their
pod's volumes: a path under a container's `volumeMounts` is on that volume; a PersistentVolumeClaim's files are
kept per claim (namespace and claimName), so they outlive the pod, as a real claim's do (a checkpoint an
attempt's preStop hook writes is there for the next attempt); any other volume's, and the container's own
filesystem's, go with the pod. Kept in memory by the emulator (`emulator.volume_files`), not in a state file.
"""

from __future__ import annotations

VolumeKey = tuple[str, str, str]  # ("pvc", namespace, claim) or ("pod", uid, volume; "" for the root filesystem)


class PodFiles:
    """What one container of one pod sees: read(path), write(path, text, append)."""

    def __init__(self, store: dict[VolumeKey, dict[str, str]], pod: dict, container: dict) -> None:
        self.store = store
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        self.namespace, self.uid = meta.get("namespace", ""), meta.get("uid", "")
        self.volumes = {v.get("name"): v for v in spec.get("volumes") or ()}
        mounts = [
            (str(m.get("mountPath") or ""), str(m.get("name") or "")) for m in container.get("volumeMounts") or ()
        ]
        self.mounts = sorted((m for m in mounts if m[0]), key=lambda m: len(m[0]), reverse=True)

    def _locate(self, path: str) -> tuple[VolumeKey, str]:
        for mount_path, volume_name in self.mounts:
            prefix = mount_path.rstrip("/") + "/"
            if path == mount_path or path.startswith(prefix):
                relative = path[len(prefix) :] if path.startswith(prefix) else ""
                claim = (self.volumes.get(volume_name) or {}).get("persistentVolumeClaim") or {}
                if claim.get("claimName"):
                    return ("pvc", self.namespace, str(claim["claimName"])), relative
                return ("pod", self.uid, volume_name), relative
        return ("pod", self.uid, ""), path

    def read(self, path: str) -> str | None:
        key, relative = self._locate(path)
        return self.store.get(key, {}).get(relative)

    def write(self, path: str, text: str, append: bool) -> None:
        key, relative = self._locate(path)
        files = self.store.setdefault(key, {})
        files[relative] = (files.get(relative, "") if append else "") + text


def forget_pod(store: dict[VolumeKey, dict[str, str]], uid: str) -> None:
    """A removed pod's own files go (a claim's stay)."""
    for key in [k for k in store if k[0] == "pod" and k[1] == uid]:
        del store[key]
