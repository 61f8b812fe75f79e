"""Reconcile strategies: named retry behaviours over the work queue's rate limiters.

A kind's strategy decides how long a key waits before it is reconciled again after a
failed reconcile, a lost write race (409 Conflict) or ``Result.again()`` — what the
runtime's ``add_rate_limited`` does. Events on the object itself (a create, a spec
change) are never delayed, as in controller-runtime.

- ``immediate`` — retry at once; after ``attempts`` failures in a row, every ``slow``
  seconds (``ItemFastSlowRateLimiter``; ``attempts=10``, ``slow=1``);
- ``backoff`` — wait ``base * 2**failures`` seconds, at most ``cap``, per key
  (``ItemExponentialFailureRateLimiter``; ``base=0.005``, ``cap=1000``);
- ``rate_limited`` — the longer of that backoff and a token bucket shared by the kind's
  keys, ``qps`` tokens a second with ``burst`` stored (``MaxOfRateLimiter`` of the two
  with a ``BucketRateLimiter``; ``qps=10``, ``burst=100``, ``base``, ``cap``):
  controller-runtime's default, and the kernel's.

A strategy is written ``name`` or ``name(key=value, ...)``, e.g. ``backoff(cap=30)``.
Where it comes from, the later winning:

1. the code: ``@platform.kind(Database, strategy="backoff")`` (default ``rate_limited``);
2. the ``strategies`` mapping given to the :class:`~kubewerk.lifecycle.Platform`;
3. the environment variable ``KUBEWERK_RECONCILE_STRATEGY``:
   ``"Database=backoff(cap=30); *=rate_limited(qps=5)"`` — entries separated by ``;``
   or new lines, each ``KIND=STRATEGY`` where ``KIND`` is the kind (``Database``), the
   kind with its group (``Database.example.com``) or ``*`` (every kind without an entry
   of its own).

So an operator switches strategies by configuration, without a code change. A bad entry
raises :class:`~kubewerk.lifecycle.LifecycleDefinitionError` naming it when the kind is
registered.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kubewerk.lifecycle.errors import LifecycleDefinitionError
from kubewerk.runtime.queue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)

__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "STRATEGY_ENV",
    "Strategy",
    "parse_strategy_map",
    "resolve_strategy",
]

STRATEGY_ENV: Final = "KUBEWERK_RECONCILE_STRATEGY"
"""The environment variable read for per-kind strategies (see the module doc)."""

STRATEGIES: Final[dict[str, dict[str, float]]] = {
    "immediate": {"attempts": 10, "slow": 1.0},
    "backoff": {"base": 0.005, "cap": 1000.0},
    "rate_limited": {"qps": 10.0, "burst": 100, "base": 0.005, "cap": 1000.0},
}
"""Each strategy's parameters and their defaults."""

_SPEC: Final = re.compile(r"\s*([a-z_]+)\s*(?:\((.*)\))?\s*")


@dataclass(frozen=True)
class Strategy:
    """A named strategy with its parameters (defaults filled in)."""

    name: str
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        defaults = STRATEGIES.get(self.name)
        if defaults is None:
            raise LifecycleDefinitionError(
                f"unknown reconcile strategy {self.name!r} (one of {', '.join(STRATEGIES)})"
            )
        unknown = sorted(set(self.params) - set(defaults))
        if unknown:
            raise LifecycleDefinitionError(
                f"strategy {self.name} has no parameter {unknown[0]!r} "
                f"(parameters: {', '.join(defaults)})"
            )
        merged = {**defaults, **self.params}
        for key, value in merged.items():
            if not isinstance(value, int | float) or value < 0 or value != value:
                raise LifecycleDefinitionError(
                    f"strategy {self.name}: {key} must be a number >= 0, not {value!r}"
                )
        if self.name == "rate_limited" and (merged["qps"] <= 0 or merged["burst"] < 1):
            raise LifecycleDefinitionError("strategy rate_limited: qps must be > 0, burst >= 1")
        object.__setattr__(self, "params", merged)

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """``name`` or ``name(key=value, ...)``."""
        match = _SPEC.fullmatch(text)
        if match is None:
            raise LifecycleDefinitionError(
                f"reconcile strategy {text!r}: expected NAME or NAME(key=value, ...)"
            )
        params: dict[str, float] = {}
        for item in (match.group(2) or "").split(","):
            if not item.strip():
                continue
            key, eq, value = item.partition("=")
            try:
                number = float(value)
            except ValueError:
                number = -1.0
            if not eq or not key.strip() or number < 0:
                raise LifecycleDefinitionError(
                    f"reconcile strategy {text!r}: parameter {item.strip()!r} must be "
                    "key=number (a number >= 0)"
                )
            params[key.strip()] = number
        return cls(match.group(1), params)

    def rate_limiter(self) -> RateLimiter:
        """A fresh rate limiter for one controller's queue."""
        p = self.params
        if self.name == "immediate":
            return ItemFastSlowRateLimiter(0.0, float(p["slow"]), int(p["attempts"]))
        backoff = ItemExponentialFailureRateLimiter(float(p["base"]), float(p["cap"]))
        if self.name == "backoff":
            return backoff
        return MaxOfRateLimiter(backoff, BucketRateLimiter(float(p["qps"]), int(p["burst"])))

    def __str__(self) -> str:
        defaults = STRATEGIES[self.name]
        changed = [f"{k}={_number(v)}" for k, v in self.params.items() if v != defaults[k]]
        return f"{self.name}({', '.join(changed)})" if changed else self.name


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


DEFAULT_STRATEGY: Final = Strategy("rate_limited")
"""controller-runtime's default limiter: per-item backoff and a 10/s, burst 100 bucket."""


def _strategy(value: Strategy | str, where: str) -> Strategy:
    if isinstance(value, Strategy):
        return value
    if isinstance(value, str):
        return Strategy.parse(value)
    raise LifecycleDefinitionError(f"{where}: a strategy is a name or Strategy, not {value!r}")


def parse_strategy_map(text: str) -> dict[str, Strategy]:
    """``"Database=backoff(cap=30); *=immediate"`` as ``{kind: strategy}``."""
    out: dict[str, Strategy] = {}
    for entry in re.split(r"[;\n]", text):
        if not entry.strip():
            continue
        kind, eq, spec = entry.partition("=")
        if not eq or not kind.strip():
            raise LifecycleDefinitionError(
                f"{STRATEGY_ENV}: entry {entry.strip()!r} must be KIND=STRATEGY"
            )
        out[kind.strip()] = Strategy.parse(spec)
    return out


def resolve_strategy(
    kind: str,
    group: str,
    code: Strategy | str | None = None,
    configured: Mapping[str, Strategy | str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Strategy:
    """The strategy of kind ``kind`` in ``group`` (see the module doc for the order)."""
    names = (f"{kind}.{group}", kind, "*")
    chosen = _strategy(code, kind) if code is not None else DEFAULT_STRATEGY
    for source in (
        configured or {},
        parse_strategy_map((os.environ if environ is None else environ).get(STRATEGY_ENV, "")),
    ):
        for name in names:
            if name in source:
                chosen = _strategy(source[name], name)
                break
    return chosen
