"""Deployment arithmetic: fenceposts and the steps of a rolling update, as kube's
deployment controller computes them (``pkg/controller/deployment``).

Pure functions over replica counts, so a rollout's every step can be checked alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class IntOrPercentError(ValueError):
    """``maxSurge``/``maxUnavailable`` is neither an integer nor ``N%``."""


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``N%`` of ``total``
    rounded up or down."""
    if isinstance(value, bool):
        raise IntOrPercentError(f"invalid value for IntOrString: invalid type: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if not value.endswith("%"):
            raise IntOrPercentError(
                "invalid value for IntOrString: invalid type: string is not a percentage"
            )
        try:
            pct = int(value[:-1])
        except ValueError:
            raise IntOrPercentError(f'invalid value "{value}": not a percentage') from None
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    raise IntOrPercentError(f"invalid value for IntOrString: invalid type: {type(value).__name__}")


def fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: (surge, unavailable); surge rounds up, unavailable down, and
    when both come to zero unavailable becomes one (validation refuses both zero, but
    percentages of a small count can round there)."""
    surge = scaled_value(max_surge, desired, True)
    unavailable = scaled_value(max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, desired)  # MaxUnavailable: never more than desired


@dataclass(frozen=True)
class RSCounts:
    """What a rolling step needs of one ReplicaSet."""

    name: str
    replicas: int
    """spec.replicas"""
    available: int
    """status.availableReplicas"""
    created: str = ""
    """creationTimestamp (oldest scaled down first)"""


def new_rs_replicas(desired: int, surge: int, new: RSCounts, all_rs: list[RSCounts]) -> int:
    """``NewRSNewReplicas`` for RollingUpdate: how far the new ReplicaSet may grow now."""
    if new.replicas == desired:
        return desired
    if new.replicas > desired:
        return desired
    current = sum(rs.replicas for rs in all_rs)
    max_total = desired + surge
    if current >= max_total:
        return new.replicas
    grow = min(max_total - current, desired - new.replicas)
    return new.replicas + grow


def old_rs_scale_down(
    desired: int, unavailable: int, new: RSCounts, olds: list[RSCounts]
) -> dict[str, int]:
    """``reconcileOldReplicaSets``: the new ``spec.replicas`` of each old ReplicaSet that
    shrinks now (first its unavailable pods, then available ones down to
    ``desired - maxUnavailable`` available in all), oldest first."""
    old_count = sum(rs.replicas for rs in olds)
    if old_count == 0:
        return {}
    all_count = old_count + new.replicas
    min_available = desired - unavailable
    new_unavailable = new.replicas - new.available
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return {}
    out: dict[str, int] = {}
    ordered = sorted(olds, key=lambda rs: (rs.created, rs.name))
    # cleanupUnhealthyReplicas
    cleaned = 0
    current = {rs.name: rs.replicas for rs in ordered}
    for rs in ordered:
        if cleaned >= max_scaled_down:
            break
        if rs.replicas == 0 or rs.replicas == rs.available:
            continue
        step = min(max_scaled_down - cleaned, rs.replicas - rs.available)
        current[rs.name] = rs.replicas - step
        out[rs.name] = current[rs.name]
        cleaned += step
    # scaleDownOldReplicaSetsForRollingUpdate
    available = new.available + sum(rs.available for rs in ordered)  # status, as read
    if available <= min_available:
        return out
    total = available - min_available
    done = 0
    for rs in ordered:
        if done >= total:
            break
        if current[rs.name] == 0:
            continue
        step = min(current[rs.name], total - done)
        current[rs.name] -= step
        out[rs.name] = current[rs.name]
        done += step
    return out


def max_replicas_annotation(desired: int, surge: int) -> int:
    """``deployment.kubernetes.io/max-replicas``: desired plus surge."""
    return desired + surge
