"""What the pools app tells the apps above it (docs/architecture.md): pools knows none of them.

`membership_changed`: sent by `pools.services.membership` right after it changed which nodes serve which
platforms, inside the writing transaction. Arguments: `backend_ids`, the backends whose nodes moved, and
`node_ids`, the nodes whose platforms changed (None: any node of those backends, e.g. after a platform's
config changed and its rows were rewritten).
"""

from django.dispatch import Signal

membership_changed = Signal()
