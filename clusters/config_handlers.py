"""The handler of the BACKEND config type (clusters.config_types): a `<set …>` marker in a document keeps
the stored secret; pools using a backend are its referrers. Registered by `ClustersConfig.ready()`."""

from __future__ import annotations

from clusters.config_types import BACKEND
from clusters.kube.connection import SECRET_FIELDS
from clusters.models import Backend
from configs.kinds import KEEP_SECRET
from configs.registry import SchemaHandler


class BackendHandler(SchemaHandler):
    schema, model = BACKEND, Backend

    def prepare(self, docs):
        """A `<set …>` marker keeps the stored secret: put the stored value in the document."""
        keep = [doc for doc in docs if any(getattr(doc, key) is KEEP_SECRET for key in SECRET_FIELDS)]
        stored = (
            {
                b.name: b
                for b in Backend.objects.filter(name__in=[doc.name for doc in keep]).only("name", *SECRET_FIELDS)
            }
            if keep
            else {}
        )
        for doc in keep:
            for key in SECRET_FIELDS:
                if getattr(doc, key) is KEEP_SECRET:
                    current = getattr(stored[doc.name], key) if doc.name in stored else ""
                    if not current:
                        doc.warnings.append(f"{key}: the <set> marker keeps a stored value, but none is stored")
                    setattr(doc, key, current)
        return None

    def referrers(self, obj):
        return [f"pool {name}" for name in obj.pools.order_by("name").values_list("name", flat=True)]


CONFIG_TYPES = [BackendHandler()]
