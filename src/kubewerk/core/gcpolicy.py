"""The cyclic garbage collector's settings for a long-running process that holds data.

An API server holds every stored object, and an operator's informers hold every watched
one, as Python dicts and lists: tens of tracked containers per object, hundreds of
thousands in all. CPython (3.11 to 3.13) runs a *full* collection, a traversal of every
tracked container in the process, whenever the containers that survived since the last
full one outnumber a quarter of those it left, and at the latest after ``threshold2``
collections of generation 1. In a process whose live data grows with its writes, that is
a traversal of the whole store for every 25% it grows: measured on the embedded server
holding ~45,000 demo objects, full collections of ~110 ms each took ~11% of its CPU
under a create load and all collections ~15%, while none of that data can ever be
cyclic garbage (stored JSON holds no cycles).

:func:`tune_for_long_lived_data` changes two things, once, when the process has started:

- the objects alive after start-up (modules, compiled schemas, the built-in kinds) are
  moved to the permanent generation (``gc.freeze``), after a collection so that no
  garbage is frozen: they live as long as the process, and no collection traverses them
  again. An object frozen then that later becomes cyclic garbage is never reclaimed;
  that set is bounded by what start-up made;
- on CPython before 3.14, ``threshold2`` is raised from 10 to :data:`FULL_AFTER`: a full
  collection then waits for at least ``700 * 10 * 100`` = 700,000 net new containers
  (about 50,000 stored objects of the demo kind), and the 25% rule still applies on
  top, so a large heap is collected as often as before. Young generations are collected
  as before, so short-lived cycles (requests, connections) are reclaimed as promptly.
  Python 3.14's incremental collector gives ``threshold2`` no meaning: it is left alone.

kubewerk's own long-running commands (``kubewerk up``) call it; a library user embedding
the server or a manager in their own process decides for themselves (a test process
should not freeze its heap).
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass
from typing import Final

FULL_AFTER: Final = 100
"""``threshold2`` set by :func:`tune_for_long_lived_data` (CPython's default is 10)."""


@dataclass(frozen=True)
class GcTuning:
    """What :func:`tune_for_long_lived_data` did."""

    frozen: int
    """Objects moved to the permanent generation (``gc.get_freeze_count()`` after)."""
    thresholds: tuple[int, int, int]
    """``gc.get_threshold()`` after."""


def thresholds_for(current: tuple[int, int, int], version: tuple[int, int]) -> tuple[int, int, int]:
    """The thresholds to set on a Python of ``version`` whose thresholds are ``current``:
    ``threshold2`` raised to at least :data:`FULL_AFTER` before 3.14, else unchanged (a
    higher setting made by the user is kept)."""
    if version >= (3, 14):
        return current
    first, second, third = current
    return (first, second, max(third, FULL_AFTER))


def tune_for_long_lived_data() -> GcTuning:
    """Collect, freeze what survives, and raise ``threshold2`` (see the module's text).

    Call it once, when start-up is done and before serving; calling it again freezes what
    has been made since (a collection runs first each time). Nothing happens to the
    collector when automatic collection is disabled (``gc.disable()``, as a profiler or
    the user may have done): the answer then reports the unchanged state.
    """
    if gc.isenabled():
        gc.collect()
        gc.freeze()
        gc.set_threshold(*thresholds_for(gc.get_threshold(), sys.version_info[:2]))
    first, second, third = gc.get_threshold()
    return GcTuning(gc.get_freeze_count(), (first, second, third))
