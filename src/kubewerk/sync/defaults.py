"""Defaults a destination applies, added to a manifest or taken back out of a cluster's state.

A cluster stores more than a manifest says: every field its defaulting fills in. Comparing
a manifest with a cluster's object therefore compares the manifest *as that cluster would
store it* (``kubectl diff`` asks the server for exactly that with a dry run):

- :func:`defaulted_state` is an object as the destination would hold it, server-managed
  fields stripped: a custom resource whose CRD is known is defaulted by the schema engine
  from that CRD's version schema (what kube-apiserver applies); any other kind (a built-in
  one, or a custom kind whose CRD may not be read) by the server itself, through a
  dry-run write (:func:`~kubewerk.sync.apply.server_defaulted`). A dry run the server
  refuses leaves the object as written.
- :func:`without_defaults` goes the other way for ``cluster-wins``: from a cluster's state
  it removes what defaulting alone put there, so a manifest written back keeps the
  fields its author wrote and the ones the cluster really changed, not every default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubewerk.client import Client
from kubewerk.core.gvk import split_api_version
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.sync.apply import server_defaulted
from kubewerk.sync.diff import _item_key, same_value
from kubewerk.sync.keys import GroupKind
from kubewerk.sync.normalize import strip_server_fields
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.shapes import KEYED, LIST, Shape

__all__ = ["defaulted_state", "without_defaults"]


async def defaulted_state(
    client: Client,
    obj: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    schemas: KindSchemas,
    *,
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``obj`` without server-managed fields and status, with every default the cluster
    of ``client`` would apply to it (see the module docstring). ``live`` is the cluster's
    copy when there is one (the dry run is then a replace, else a create). Never writes;
    the result is a fresh object (``obj`` is not changed). ``warn``: as
    :func:`~kubewerk.sync.apply.server_defaulted`'s."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    compiled = schemas.defaulter(api_version, kind)
    if compiled is not None:
        out: dict[str, Any] = copy_tree(strip_server_fields(obj))
        compiled.apply_defaults(out)
        return out
    if schemas.is_custom(GroupKind(split_api_version(api_version).group, kind)):
        # a known CRD without a usable schema for this version: nothing to default with
        plain: dict[str, Any] = copy_tree(strip_server_fields(obj))
        return plain
    served = await server_defaulted(client, obj, live, warn=warn)
    stripped: dict[str, Any] = copy_tree(strip_server_fields(served if served is not None else obj))
    return stripped


def without_defaults(state: Any, manifest: Any, defaulted: Any, shape: Shape) -> Any:
    """``state`` (a cluster's value) less what defaulting alone added to ``manifest``:
    a map key ``manifest`` does not hold is dropped where ``state`` holds exactly what
    ``defaulted`` (``manifest`` with the cluster's defaults) holds there, and kept
    otherwise, reduced the same way inside (so a changed default keeps only the changed
    part). Keyed lists match items by their keys, other lists by position when all three
    have the same length. Whatever ``manifest`` holds is kept as ``state`` has it, so
    defaulting the result again gives a value semantically equal to ``state``."""
    if isinstance(state, dict) and isinstance(defaulted, dict):
        written = manifest if isinstance(manifest, dict) else {}
        out: dict[str, Any] = {}
        # the manifest's keys first, in its order; then what the cluster added
        order = [*(k for k in written if k in state), *(k for k in state if k not in written)]
        for key in order:
            value, sub = state[key], shape.member(key)
            if written.get(key) is None and key in defaulted:
                if same_value(value, defaulted[key], sub):
                    continue
                out[key] = without_defaults(value, None, defaulted[key], sub)
            else:
                out[key] = without_defaults(value, written.get(key), defaulted.get(key), sub)
        return out
    if isinstance(state, list) and isinstance(defaulted, list) and isinstance(manifest, list):
        element = shape.element()
        if shape.kind == LIST and shape.list_type == KEYED and shape.keys:
            pairs = _pairs_by_key(manifest, defaulted, shape.keys)
            if pairs is None:
                return state
            items: list[Any] = []
            for item in state:
                found = pairs.get(_item_key(item, shape.keys))
                items.append(without_defaults(item, found[0], found[1], element) if found else item)
            return items
        if len(state) == len(manifest) == len(defaulted):
            return [
                without_defaults(s, m, d, element)
                for s, m, d in zip(state, manifest, defaulted, strict=True)
            ]
    return state


def _pairs_by_key(
    manifest: list[Any], defaulted: list[Any], keys: tuple[str, ...]
) -> dict[Any, tuple[Any, Any]] | None:
    """Each manifest item with its defaulted form, by the defaulted item's key values (a
    key field may itself be defaulted: a port's ``protocol``). Defaulting keeps a list's
    items and their order, so the two lists pair by position; None when they do not
    (other lengths), or an item has no usable key, or a key repeats."""
    if len(manifest) != len(defaulted):
        return None
    out: dict[Any, tuple[Any, Any]] = {}
    for mine, theirs in zip(manifest, defaulted, strict=True):
        k = _item_key(theirs, keys)
        if k is None or k in out:
            return None
        out[k] = (mine, theirs)
    return out
