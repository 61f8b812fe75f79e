"""Table printers of the built-in workload kinds (kube's server-side printers).

``printer(api_version, kind)`` gives the columns and the cell function
kube-apiserver's table convertor uses for a built-in kind
(``pkg/printers/internalversion``), or ``None`` for a kind without one here. The table
is assembled once, on first use, from the per-group modules of this package.
"""

from __future__ import annotations

from functools import cache

from kubewerk.apiserver.printers.printer import JSON, Printer

__all__ = ["JSON", "Printer", "printer"]


@cache
def _table() -> dict[str, Printer]:
    from kubewerk.apiserver.printers.registry import printers

    return printers()


def printer(api_version: str, kind: str) -> Printer | None:
    """The printer of the kind ``kind`` served as ``api_version`` (``v1``, ``apps/v1``),
    or ``None`` when this package has none for it."""
    return _table().get(f"{api_version}/{kind}")
