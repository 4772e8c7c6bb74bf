import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()


def _load_wired() -> None:
    """A server imports at start what the apps wired by path (portal.lazy, configs.registry), so that no
    request pays for it; a CLI call, which needs little of it, imports it on first use."""
    from configs import registry
    from portal import lazy

    lazy.load_all()
    registry.handlers()


_load_wired()
