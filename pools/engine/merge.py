"""Ordered deep merge of pod templates: OSMO's `recursive_dict_update` + `merge_lists_on_name`, plus `$patch`.

OSMO semantics (osmo-reference §2.1), matched exactly:
- an overlay dict recurses into the base dict (missing keys are created);
- an overlay list onto a base list merges by `name`: a dict item whose `name` equals a base item's name is
  merged into that base item (the last one, if the base repeats a name); every other item is appended;
- an overlay list onto anything that is not a list replaces it; scalars (and null) replace;
- an empty overlay list onto a list changes nothing.
Only dict items that have a `name` key merge by name (OSMO's `'name' in "--username"` substring test is not
copied). An overlay dict onto a non-dict replaces it (OSMO would crash).

Beyond OSMO, one directive in Kubernetes' strategic-merge-patch style, never present in the output:
- `key: {"$patch": "delete"}` removes `key`;
- `key: {"$patch": "replace", ...rest}` sets `key` to `rest` instead of merging;
- a list item `{"name": "x", "$patch": "delete"}` removes the base item named `x`;
  `{"name": "x", "$patch": "replace", ...}` replaces it instead of merging;
- a list whose first item is `{"$patch": "replace"}` replaces the base list with the remaining items.

Provenance: merges carry an origin tree alongside the value (see paths.child_origin), so every leaf of the
result can say which template last set it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pools.engine.errors import EngineError
from portal.json_paths import chain_to_path, child_origin, json_copy, leaf_origins, origin_tree_from_paths

__all__ = [
    "PATCH",
    "MergeError",
    "MergedTemplate",
    "Override",
    "merge",
    "merge_templates",
    "merge_templates_traced",
    "merge_traced",
    "template_sources",
]

PATCH = "$patch"
_DIRECTIVES = ("delete", "replace", "merge")
_MISSING = object()
_DELETED = object()
_NO_NAME = object()


class MergeError(EngineError):
    """A template that cannot be merged (a malformed `$patch` directive)."""


@dataclass(frozen=True)
class Override:
    """A base leaf that an overlay replaced with a different value (used for "template overrides task" warnings)."""

    path: str
    base_origin: object
    overlay_origin: object


class MergedTemplate:
    """The merged body and `sources`: {leaf path: name of the template that last set it}.

    `sources` is built on first read from the merge's origin tree (same output as building it eagerly):
    storing a compiled platform reads it, resolving a task never does.
    """

    __slots__ = ("_origins", "_sources", "body")

    def __init__(self, body: dict, sources: dict[str, str] | None = None, *, origins: object = None) -> None:
        self.body = body
        self._sources = sources
        self._origins = origins

    @property
    def sources(self) -> dict[str, str]:
        if self._sources is None:
            self._sources = template_sources(self.body, self._origins)
        return self._sources

    def origin_tree(self) -> object:
        return origin_tree_from_paths(self.body, self.sources)

    def origins(self) -> object:
        """The merge's origin tree (labels are template names), rebuilt from `sources` if built from them."""
        if self._origins is None and self._sources is not None:
            self._origins = self.origin_tree()
        return self._origins

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MergedTemplate):
            return NotImplemented
        return (self.body, self.sources) == (other.body, other.sources)

    __hash__ = None  # mutable contents, as the dataclass it replaces

    def __repr__(self) -> str:
        return f"MergedTemplate(body={self.body!r}, sources={self.sources!r})"


def merge(base: object, overlay: object) -> object:
    """Merge `overlay` onto `base` without touching either; the result shares nothing with the inputs."""
    value, _ = merge_traced(json_copy(base), None, overlay, None)
    return value


def merge_traced(
    base: object,
    base_origin: object,
    overlay: object,
    overlay_origin: object,
    overrides: list[Override] | None = None,
    *,
    directives: bool = True,
) -> tuple[object, object]:
    """Merge and return (value, origin tree). Unchanged base subtrees are shared with the result, not copied.

    `directives=False` treats `$patch` as an ordinary key: for merging rendered data, where a `$patch`
    could only have come from a variable's value and must stay data. In that mode overlay subtrees that
    land on missing keys are shared with the result too (pass a fresh overlay).
    """
    value, origin = _Merger(overrides, directives).value(base, base_origin, overlay, overlay_origin, None)
    if value is _DELETED:
        return {}, None
    return value, origin


def merge_templates(ordered: list[tuple[str, dict]]) -> MergedTemplate:
    """Merge named templates in order (pool common ones, then platform overrides) onto an empty dict."""
    merged, origins = merge_templates_traced(ordered)
    return MergedTemplate(merged, origins=origins)


def template_sources(body: object, origins: object) -> dict[str, str]:
    """{leaf path: template name}; an empty document has no leaves."""
    sources = leaf_origins(body, origins)  # iter_leaves' labels, without a generator per node
    sources.pop("", None)  # the root path: an empty document
    return sources


def merge_templates_traced(ordered: list[tuple[str, dict]]) -> tuple[dict, object]:
    """Merge onto an empty dict; the result shares nothing with the inputs, and no template is copied first.

    A template's subtree that lands where the result has nothing yet is copied once, with the template's name
    covering it in the origin tree, instead of being rebuilt node by node, when it has no `$patch` directive
    (nothing in it to interpret); the rest of a template is rebuilt by the merge itself. The merge never
    mutates its inputs or what it built, so later templates merge over shared subtrees copy-on-write.
    """
    body: object = {}
    origins: object = None
    for name, template in ordered:
        where = f"pod_template[{name}]"
        if not isinstance(template, dict):
            raise MergeError("a pod template must be a mapping", field=where, value=type(template).__name__)
        try:
            value, origins = _Merger(None, True, copy_missing=True).value(body, origins, template, name, None)
        except EngineError as error:
            raise error.at(where) from None
        body = {} if value is _DELETED else value
        origins = None if value is _DELETED else origins
    return body, origins


class _HasPatch(Exception):
    """A subtree holds a `$patch` directive: the merge must interpret it, not copy it."""


def _copy_without_patches(value: object) -> object:
    """json_copy, raising _HasPatch when a mapping has a `$patch` key."""
    if isinstance(value, dict):
        if PATCH in value:
            raise _HasPatch
        return {k: _copy_without_patches(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):  # anything else is a leaf to the merge, as before
        return [_copy_without_patches(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def _directive(item: dict, chain: tuple | None) -> str | None:
    if PATCH not in item:
        return None
    directive = item[PATCH]
    if directive not in _DIRECTIVES:
        raise MergeError(
            f"unknown {PATCH} directive; use one of {', '.join(_DIRECTIVES)}",
            field=chain_to_path((chain, PATCH)),
            value=directive,
        )
    return directive


def _name_of(item: object) -> object:
    if not isinstance(item, dict) or "name" not in item:
        return _NO_NAME
    name = item["name"]
    try:
        hash(name)
    except TypeError:
        return _NO_NAME  # an unhashable "name" cannot identify anything: the item is appended
    return name


def _label(origin: object) -> object:
    """The origin of an empty container is a label (it is a leaf), never a tree."""
    return None if isinstance(origin, (dict, list)) else origin


def _is_list_replace_marker(item: object) -> bool:
    return isinstance(item, dict) and item.get(PATCH) == "replace" and "name" not in item


class _Merger:
    __slots__ = ("copy_missing", "directives", "overrides", "share_missing")

    def __init__(
        self, overrides: list[Override] | None, directives: bool = True, *, copy_missing: bool = False
    ) -> None:
        self.overrides = overrides
        self.directives = directives
        # Without directives nothing in the overlay needs interpreting: a subtree landing on a missing key is
        # shared. With `copy_missing`, such a subtree is copied in one pass unless it holds a `$patch`.
        self.share_missing = not directives
        self.copy_missing = copy_missing

    def value(self, base, base_origin, overlay, overlay_origin, chain):
        if base is _MISSING:
            if self.share_missing:  # nothing to merge into and nothing to interpret
                return overlay, overlay_origin
            if self.copy_missing and isinstance(overlay, (dict, list)):
                try:
                    return _copy_without_patches(overlay), overlay_origin
                except _HasPatch:
                    pass  # interpreted below, node by node
        if isinstance(overlay, dict):
            return self._dict_value(base, base_origin, overlay, overlay_origin, chain)
        if isinstance(overlay, list):
            if isinstance(base, list):
                return self._list(base, base_origin, overlay, overlay_origin, chain)
            self._note_replaced(base, base_origin, overlay, overlay_origin, chain)
            out, origins = self._list([], None, overlay, overlay_origin, chain)
            return out, origins if out else _label(overlay_origin)
        self._note_replaced(base, base_origin, overlay, overlay_origin, chain)
        return overlay, overlay_origin

    def _note_replaced(self, base, base_origin, overlay, overlay_origin, chain) -> None:
        if self.overrides is None or base is _MISSING or isinstance(base, (dict, list)) or base == overlay:
            return
        if base_origin != overlay_origin:
            self.overrides.append(Override(chain_to_path(chain), base_origin, overlay_origin))

    def _dict_value(self, base, base_origin, overlay, overlay_origin, chain):
        directive = _directive(overlay, chain) if self.directives else None
        if directive == "delete":
            if len(overlay) > 1:
                raise MergeError(
                    f'"{PATCH}: delete" takes no other keys',
                    field=chain_to_path(chain),
                    value=sorted(k for k in overlay if k != PATCH),
                )
            return _DELETED, None
        if directive == "replace" or not isinstance(base, dict):
            return self._dict({}, None, overlay, overlay_origin, chain)
        return self._dict(base, base_origin, overlay, overlay_origin, chain)

    def _dict(self, base: dict, base_origin, overlay: dict, overlay_origin, chain):
        out = dict(base)
        origins = dict(base_origin) if isinstance(base_origin, dict) else dict.fromkeys(base, base_origin)
        directives, tree = self.directives, isinstance(overlay_origin, (dict, list))
        scalars_replace = self.overrides is None  # what value() does with a scalar when nothing is reported
        for key, item in overlay.items():
            if key == PATCH and directives:
                continue
            item_origin = child_origin(overlay_origin, key) if tree else overlay_origin
            if not isinstance(item, (dict, list)):
                if scalars_replace:
                    out[key], origins[key] = item, item_origin
                    continue
            elif self.copy_missing and key not in out:  # value()'s first step, without the call
                try:
                    out[key], origins[key] = _copy_without_patches(item), item_origin
                    continue
                except _HasPatch:
                    pass
            value, origin = self.value(out.get(key, _MISSING), origins.get(key), item, item_origin, (chain, key))
            if value is _DELETED:
                out.pop(key, None)
                origins.pop(key, None)
            else:
                out[key] = value
                origins[key] = origin
        return out, origins if out else _label(overlay_origin)

    def _list(self, base: list, base_origin, overlay: list, overlay_origin, chain):
        start = 0
        if overlay and self.directives and _is_list_replace_marker(overlay[0]):
            if len(overlay[0]) > 1:
                raise MergeError(
                    f'a list "{PATCH}: replace" marker takes no other keys', field=chain_to_path((chain, 0))
                )
            base, base_origin, start = [], None, 1
        elif not overlay:
            return base, base_origin
        out = list(base)
        origins = list(base_origin) if isinstance(base_origin, list) else [base_origin] * len(base)
        by_name = {}
        for index, item in enumerate(base):  # _name_of, inline: a list of 50 containers asks 50 times
            if isinstance(item, dict) and "name" in item:
                try:  # noqa: SIM105 (contextlib.suppress costs a context manager per item)
                    by_name[item["name"]] = index  # the last base item of a name wins, as in OSMO
                except TypeError:
                    pass  # an unhashable "name" cannot identify anything
        deleted: set[int] = set()
        tree, scalars_append = isinstance(overlay_origin, (dict, list)), self.overrides is None
        for index in range(start, len(overlay)):
            item = overlay[index]
            item_origin = child_origin(overlay_origin, index) if tree else overlay_origin
            if scalars_append and not isinstance(item, (dict, list)):  # no name: appended, as value() would
                out.append(item)
                origins.append(item_origin)
                continue
            item_chain = (chain, index)  # errors point into the overlay
            name = _name_of(item)
            directive = _directive(item, item_chain) if self.directives and isinstance(item, dict) else None
            if directive == "delete":
                self._check_item_delete(item, name, item_chain)
                if name in by_name:
                    deleted.add(by_name[name])
                continue
            if directive == "replace" and name is _NO_NAME:
                raise MergeError(
                    f'a list "{PATCH}: replace" marker must be the first item of the list',
                    field=chain_to_path(item_chain),
                )
            target = by_name.get(name) if name is not _NO_NAME else None
            if target is not None and target not in deleted:
                if self.overrides is not None:  # reported overrides point into the result
                    item_chain = (chain, target)
                out[target], origins[target] = self.value(out[target], origins[target], item, item_origin, item_chain)
            else:
                if self.overrides is not None:
                    item_chain = (chain, len(out))
                value, origin = self.value(_MISSING, None, item, item_origin, item_chain)
                out.append(value)
                origins.append(origin)
        if deleted:
            keep = [i for i in range(len(out)) if i not in deleted]
            out = [out[i] for i in keep]
            origins = [origins[i] for i in keep]
        return out, origins if out else _label(overlay_origin)

    @staticmethod
    def _check_item_delete(item: dict, name: object, chain: tuple) -> None:
        if name is _NO_NAME:
            raise MergeError(
                f'a list item with "{PATCH}: delete" needs a "name" to say which item to remove',
                field=chain_to_path(chain),
            )
        extra = sorted(k for k in item if k not in ("name", PATCH))
        if extra:
            raise MergeError(
                f'a list item with "{PATCH}: delete" takes only "name"', field=chain_to_path(chain), value=extra
            )
