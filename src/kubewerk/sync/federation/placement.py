"""The placement decision, as a pure function: :func:`decide`.

Given a ClusterSet's members (labels and taints, the controller's own taints from the
set's status included), a Placement's spec and the time, it returns the members chosen:

1. candidates: members whose labels match ``clusterSelector`` (unset or empty: all) and
   all of whose taints a toleration matches (a taint with ``timeAdded`` stays tolerated
   only ``tolerationSeconds`` after it, when the toleration sets them);
2. ``Spread`` takes every candidate; ``PickN`` keeps the previous decisions that are still
   candidates and fills up to ``numberOfClusters`` in rendezvous-hash order of the
   placement's identity and the member's name, so adding or removing a member moves as
   few decisions as possible and two placements spread over different members.

Toleration matching follows a pod's tolerations (``ToleratesTaint`` in Kubernetes): an
empty key with ``Exists`` matches every taint, an empty effect every effect, ``Exists``
any value, ``Equal`` (the default) the same value. A Placement without a toleration for
:data:`~kubewerk.sync.federation.models.UNREACHABLE_TAINT` (neither that key nor an empty
key, with effect ``NoSelect`` or empty) gets ``{key: unreachable, operator: Exists,
tolerationSeconds: 300}``, as the DefaultTolerationSeconds admission plugin gives pods:
a member that stops answering keeps its workloads for five minutes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict
from kubewerk.sync.federation.models import UNREACHABLE_TAINT

__all__ = [
    "DEFAULT_UNREACHABLE_TOLERATION_SECONDS",
    "Decision",
    "PlacementError",
    "decide",
    "effective_tolerations",
    "tolerates",
]

DEFAULT_UNREACHABLE_TOLERATION_SECONDS: Final = 300


class PlacementError(ValueError):
    """A placement that cannot be decided (a label selector Kubernetes would refuse)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The chosen members (sorted by name), whether the strategy got as many as it asks
    for, why not, and when an expiring toleration makes the decision change (or None)."""

    clusters: tuple[str, ...]
    satisfied: bool
    message: str
    review_at: datetime | None


def effective_tolerations(tolerations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The placement's tolerations plus the default one for the unreachable taint."""
    out = [dict(t) for t in tolerations]
    for t in out:
        key = t.get("key") or ""
        if key in ("", UNREACHABLE_TAINT) and (t.get("effect") or "") in ("", "NoSelect"):
            return out
    out.append(
        {
            "key": UNREACHABLE_TAINT,
            "operator": "Exists",
            "effect": "NoSelect",
            "tolerationSeconds": DEFAULT_UNREACHABLE_TOLERATION_SECONDS,
        }
    )
    return out


def _matches(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or "NoSelect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def tolerates(
    tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any], now: datetime
) -> tuple[bool, datetime | None]:
    """Whether a toleration matches ``taint`` at ``now``, and until when (None: for
    ever, or not tolerated). Of several matching tolerations the longest-lasting counts."""
    best: tuple[bool, datetime | None] = (False, None)
    added = _parse_time(taint.get("timeAdded"))
    for t in tolerations:
        if not _matches(t, taint):
            continue
        seconds = t.get("tolerationSeconds")
        if seconds is None or added is None:
            return True, None
        until = added + timedelta(seconds=int(seconds))
        if now < until and (best[1] is None or until > best[1]):
            best = (True, until)
    return best


def _rank(identity: str, name: str) -> bytes:
    return hashlib.sha256(f"{identity}\x00{name}".encode()).digest()


def decide(
    members: Iterable[Mapping[str, Any]],
    spec: Mapping[str, Any],
    *,
    identity: str,
    now: datetime,
    previous: Iterable[str] = (),
) -> Decision:
    """The members ``spec`` (a Placement's spec, JSON names) selects among ``members``
    (each ``{name, labels, taints}``, taints including the controller's); ``identity``
    (e.g. the placement's namespace/name) seeds ``PickN``'s order; ``previous`` are the
    last decisions (kept under ``PickN`` while still candidates). Raises
    :class:`PlacementError` for a label selector Kubernetes would refuse."""
    try:
        selector = label_selector_from_dict(spec.get("clusterSelector") or {})
    except LabelSelectorError as exc:
        raise PlacementError(f"spec.clusterSelector: {exc}") from None
    tolerations = effective_tolerations(spec.get("tolerations") or [])
    candidates: list[str] = []
    excluded: list[str] = []
    review: datetime | None = None
    for member in members:
        name = str(member.get("name"))
        if not selector.matches(member.get("labels") or {}):
            continue
        ok = True
        for taint in member.get("taints") or []:
            tolerated, until = tolerates(tolerations, taint, now)
            if not tolerated:
                ok = False
                break
            if until is not None and (review is None or until < review):
                review = until
        if ok:
            candidates.append(name)
        else:
            excluded.append(name)
    candidates.sort()
    note = f" ({', '.join(sorted(excluded))} tainted and not tolerated)" if excluded else ""
    if spec.get("strategy", "Spread") != "PickN":
        if not candidates:
            return Decision((), False, "no member matches" + note, review)
        return Decision(tuple(candidates), True, f"{len(candidates)} selected" + note, review)
    want = int(spec.get("numberOfClusters") or 0)
    kept = [c for c in sorted(set(previous)) if c in candidates][:want]
    rest = sorted((c for c in candidates if c not in kept), key=lambda c: _rank(identity, c))
    chosen = sorted([*kept, *rest[: max(0, want - len(kept))]])
    if len(chosen) < want:
        return Decision(
            tuple(chosen),
            False,
            f"{len(chosen)} of {want} members available" + note,
            review,
        )
    return Decision(tuple(chosen), True, f"{want} selected" + note, review)
