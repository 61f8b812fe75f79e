"""Numbers as kube-apiserver stores unstructured data and answers with it.

kube-apiserver decodes a custom resource into unstructured data with ``sigs.k8s.io/json``
(``UnmarshalCaseSensitivePreserveInts``: an integer literal within int64 becomes an
``int64``, any other number a ``float64``), runs admission on that, and stores it with
Go's ``encoding/json``. That encoder writes a ``float64`` as its shortest round-trip
digits, in fixed notation when ``1e-6 <= |x| < 1e21`` and in exponent notation otherwise
(``floatEncoder``: ``1.0`` → ``1``, ``1e20`` → ``100000000000000000000``,
``12345678901234567890`` → ``12345678901234567000``, ``1e-07`` cleaned to ``1e-7``,
``1e+21``). Every answer (the create or update itself, GET, LIST, WATCH) is that stored
text decoded again, so an integral ``float64`` whose Go text fits int64 comes back as an
``int64``: a client reading ``replicas: 1.0`` back into an ``int32`` field works.

:func:`as_stored` gives a decoded value that form, in place, as values orjson writes
with Go's text. An integral float below 1e21 in size, whose Go text is digits, becomes
the integer those digits read as when it is within int64 (``1.0`` → 1, ``-0.0`` → 0 as
Go's ``-0`` reads back, ``2.0**60`` → 1152921504606847000, the digits Go writes), and
also when it is in [2**63, 2**64): orjson writes such an integer as the same digits, and
kube reads them back as the same float64 (``gofmt.json_kind`` calls such an int a
``number``). Every other float stays: orjson writes Go's text for all of them except the
non-integral ones with ``1e-6 <= |x| < 1e-5`` (Go ``0.0000015``, orjson ``1.5e-6``) and
the integral ones whose digits are beyond that range (``1e20``: Go's digits, orjson's
exponent); ``gofmt.go_json_float`` is Go's text for every float.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.core.gofmt import EXACT_FLOAT_INTS, INT64_MAX, INT64_MIN, go_json_float

_UINT64_BOUND: Final = 2**64


def stored_float(value: float, int64_only: bool = False) -> int | float:
    """The ``float64`` ``value`` as kube-apiserver answers it after storing it (see the
    module doc): Go's text of it read back, as an int where that text is an integer that
    orjson writes as the same digits (``int64_only``: only where it reads back as an
    integer, within int64)."""
    if not value.is_integer():
        return value
    if -EXACT_FLOAT_INTS < value < EXACT_FLOAT_INTS:
        return int(value)
    if abs(value) < 1e21:
        # Go writes the shortest round-trip digits padded with zeros (2**60 as
        # 1152921504606847000), which read back as that integer when within int64
        digits = int(go_json_float(value))
        if INT64_MIN <= digits <= (INT64_MAX if int64_only else _UINT64_BOUND - 1):
            return digits
    return value


def as_stored(value: Any, int64_only: bool = False) -> Any:
    """``value`` (decoded JSON) with every float as :func:`stored_float` makes it, changed
    in place (objects and arrays keep their identity); returns it, or the new scalar for
    a top-level float. Iterative: no recursion limit, whatever the nesting."""
    kind = type(value)
    if kind is float:
        return stored_float(value, int64_only)
    if kind is not dict and kind is not list:
        return value
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        # a value replaced under an existing key or index: the container's size stays
        pairs = node.items() if type(node) is dict else enumerate(node)
        for key, item in pairs:
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                push(item)
            elif item_kind is float:
                node[key] = stored_float(item, int64_only)
    return value
