"""kubesim: a simulated Kubernetes API server (kmock-based) for tests and the dev server."""

from .emulator import KubeEmulator
from .resources import ApiError, ResourceType
from .server import EmulatorServer

__all__ = ["ApiError", "EmulatorServer", "KubeEmulator", "ResourceType"]
