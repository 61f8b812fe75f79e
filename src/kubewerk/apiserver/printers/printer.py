"""The ``Printer`` a built-in kind's Table is made from (its columns and its cells)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubewerk.apiserver.strategy import PrinterColumn

JSON = dict[str, Any]

Row = Callable[[JSON, float], list[Any]]
"""A kind's cells for an object at a given time (seconds since the epoch)."""


@dataclass(frozen=True, slots=True)
class Printer:
    """The Table of one kind as kube-apiserver's table convertor builds it.

    ``columns`` are the columns after Name, in kube's order (wide-only columns have
    ``priority=1``); ``cells(obj)`` gives one cell per column for a stored object
    (defaults applied), computed as Kubernetes' printer for the kind computes them,
    with ages measured against the current time; ``cells_at(obj, now)`` the same at a
    given time. ``name(obj)`` is the Name cell, which a few kinds print decorated
    (a default StorageClass is ``standard (default)``); it is ``metadata.name`` for
    every other kind.
    """

    columns: tuple[PrinterColumn, ...]
    cells: Callable[[JSON], list[Any]]
    cells_at: Row = field(default=lambda obj, now: [])
    name: Callable[[JSON], str] = field(
        default=lambda obj: str((obj.get("metadata") or {}).get("name", ""))
    )

    @classmethod
    def of(
        cls,
        columns: tuple[PrinterColumn, ...],
        row: Row,
        name: Callable[[JSON], str] | None = None,
    ) -> Printer:
        """A printer whose cells are ``row(obj, now)`` (``now`` the current time for
        ``cells``); ``row`` must give exactly one cell per column."""

        def cells(obj: JSON) -> list[Any]:
            return row(obj, time.time())

        if name is None:
            return cls(columns, cells, row)
        return cls(columns, cells, row, name)
