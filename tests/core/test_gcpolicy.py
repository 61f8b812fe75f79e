"""The GC settings of kubewerk's long-running processes (core.gcpolicy)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from kubewerk.core.gcpolicy import FULL_AFTER, thresholds_for


@pytest.mark.parametrize("version", [(3, 11), (3, 12), (3, 13)])
def test_threshold2_raised_before_314(version: tuple[int, int]) -> None:
    assert thresholds_for((700, 10, 10), version) == (700, 10, FULL_AFTER)


def test_user_thresholds_kept_but_threshold2_floor() -> None:
    # the young generations are the user's; a higher threshold2 is kept
    assert thresholds_for((2000, 20, 5), (3, 11)) == (2000, 20, FULL_AFTER)
    assert thresholds_for((700, 10, 500), (3, 11)) == (700, 10, 500)


def test_incremental_collector_left_alone() -> None:
    assert thresholds_for((2000, 10, 0), (3, 14)) == (2000, 10, 0)
    assert thresholds_for((700, 10, 10), (3, 15)) == (700, 10, 10)


_PROBE = """
import gc, sys
from kubewerk.core.gcpolicy import tune_for_long_lived_data
if sys.argv[1] == "off":
    gc.disable()
garbage = []
garbage.append(garbage)  # a cycle made before tuning: collected, never frozen
import weakref
class Box: pass
box = Box(); box.me = box; probe = weakref.ref(box); del box
t = tune_for_long_lived_data()
import json
print(json.dumps([t.frozen, t.thresholds, gc.get_freeze_count(), probe() is None, gc.isenabled()]))
"""


def _probe(mode: str) -> list[Any]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True
    ).stdout
    answer: list[Any] = json.loads(out)
    return answer


def test_tuning_freezes_survivors_after_collecting_garbage() -> None:
    frozen, thresholds, freeze_count, collected, enabled = _probe("on")
    assert frozen == freeze_count > 1000  # the interpreter's own start-up objects
    assert collected  # the cycle made before tuning was collected, not frozen
    assert enabled
    if sys.version_info < (3, 14):
        assert thresholds[2] == FULL_AFTER


def test_disabled_collector_untouched() -> None:
    frozen, _thresholds, freeze_count, collected, enabled = _probe("off")
    assert frozen == freeze_count == 0
    assert not enabled
    assert not collected  # nothing collected it
