"""The ``Printer`` a built-in kind's Table is made from (its columns and its cells)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubewerk.apiserver.strategy import PrinterColumn

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Printer:
    """The Table of one kind as kube-apiserver's table convertor builds it.

    ``columns`` are the columns after Name, in kubectl's order (wide-only columns have
    ``priority=1``); ``cells(obj)`` gives one cell per column for a stored object
    (defaults applied), computed as Kubernetes' printer for the kind computes them,
    with ages measured against the current time.
    """

    columns: tuple[PrinterColumn, ...]
    cells: Callable[[JSON], list[Any]]
