"""The process's open-file (descriptor) limit, lifted at start as Go programs lift it.

Since Go 1.19 every Go program (kube-apiserver and kube's controllers included) raises its
soft ``RLIMIT_NOFILE`` to the hard limit when it starts, capped on macOS where the kernel
refuses a soft limit above its per-process maximum. kubewerk's servers and its controller
manager do the same through :func:`raise_open_file_limit`: each idle client of a server and
each watched kind of a manager holds a descriptor, and the common soft limit of 1,024 would
lock out the thousand-and-first.

This is the one module of :mod:`kubewerk.core` with a side effect on the process; the
choice of the limits to try is the pure :func:`soft_limit_candidates`.
"""

from __future__ import annotations

from typing import Final

OPEN_MAX: Final = 10240
"""macOS's ``OPEN_MAX``: the soft limit tried when it refuses the hard one (it refuses an
unlimited or very high soft descriptor limit)."""


def soft_limit_candidates(soft: int, hard: int, infinity: int) -> list[int]:
    """The soft limits to try, in order, to lift ``soft`` towards ``hard``; empty when there
    is nothing to lift (``soft`` already equals ``hard`` or is unlimited).

    ``infinity`` is the platform's ``RLIM_INFINITY``. The hard limit comes first; when it is
    unlimited or above :data:`OPEN_MAX`, ``OPEN_MAX`` follows as the fallback macOS accepts.
    A candidate that would not raise ``soft`` is left out.
    """
    if soft in (hard, infinity):
        return []
    targets = [hard] if hard != infinity and hard <= OPEN_MAX else [hard, OPEN_MAX]
    return [t for t in targets if t == infinity or t > soft]


def raise_open_file_limit() -> tuple[int, int]:
    """Lift the soft ``RLIMIT_NOFILE`` to the hard limit (best effort); return ``(soft, hard)``
    as they are afterwards.

    The hard limit is never changed. A refused candidate is passed over silently (the limit
    then stays what it was). Without the ``resource`` module (Windows) nothing happens and
    the answer is ``(-1, -1)``.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return (-1, -1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for target in soft_limit_candidates(soft, hard, resource.RLIM_INFINITY):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            continue
        break
    return resource.getrlimit(resource.RLIMIT_NOFILE)
