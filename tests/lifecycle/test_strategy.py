"""Reconcile strategies: parsing, the rate limiters they map onto, and where a kind's
strategy comes from (code < platform mapping < environment)."""

from __future__ import annotations

import pytest

from kubewerk.lifecycle import STRATEGY_ENV, LifecycleDefinitionError, Strategy
from kubewerk.lifecycle.strategy import DEFAULT_STRATEGY, parse_strategy_map, resolve_strategy
from kubewerk.runtime.queue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
)


def test_parse_fills_in_defaults_and_prints_back_what_differs() -> None:
    s = Strategy.parse("backoff(cap=30)")
    assert s.name == "backoff" and dict(s.params) == {"base": 0.005, "cap": 30.0}
    assert str(s) == "backoff(cap=30)"
    assert str(Strategy.parse(" immediate ")) == "immediate"
    assert str(Strategy.parse("rate_limited(qps=2.5, burst=5)")) == "rate_limited(qps=2.5, burst=5)"
    assert Strategy("rate_limited") == DEFAULT_STRATEGY


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fast", r"unknown reconcile strategy 'fast' \(one of immediate, backoff, rate_limited\)"),
        ("backoff(qps=1)", r"strategy backoff has no parameter 'qps' \(parameters: base, cap\)"),
        ("backoff(cap)", r"parameter 'cap' must be key=number"),
        ("backoff(cap=-1)", r"parameter 'cap=-1' must be key=number"),
        ("backoff(cap=soon)", r"parameter 'cap=soon' must be key=number"),
        ("rate_limited(qps=0)", r"qps must be > 0"),
        ("Backoff", r"expected NAME or NAME\(key=value, ...\)"),
    ],
)
def test_bad_strategies_are_refused(text: str, message: str) -> None:
    with pytest.raises(LifecycleDefinitionError, match=message):
        Strategy.parse(text)


def test_each_strategy_maps_onto_the_queues_limiters() -> None:
    immediate = Strategy.parse("immediate(attempts=2, slow=3)").rate_limiter()
    assert isinstance(immediate, ItemFastSlowRateLimiter)
    assert [immediate.when("k") for _ in range(4)] == [0.0, 0.0, 3.0, 3.0]
    backoff = Strategy.parse("backoff(base=1, cap=3)").rate_limiter()
    assert isinstance(backoff, ItemExponentialFailureRateLimiter)
    assert [backoff.when("k") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    limited = Strategy.parse("rate_limited(qps=1, burst=1, base=0, cap=0)").rate_limiter()
    assert isinstance(limited, MaxOfRateLimiter)
    assert [type(x) for x in limited.limiters] == [
        ItemExponentialFailureRateLimiter,
        BucketRateLimiter,
    ]
    first, second = limited.when("a"), limited.when("b")  # one token, shared by all keys
    assert first == 0.0 and 0.9 < second <= 1.0
    # a fresh limiter per call: two controllers never share a bucket
    assert Strategy("backoff").rate_limiter() is not Strategy("backoff").rate_limiter()


def test_the_environment_map() -> None:
    assert parse_strategy_map("Database=backoff(cap=30); *=immediate\nCache = rate_limited") == {
        "Database": Strategy.parse("backoff(cap=30)"),
        "*": Strategy("immediate"),
        "Cache": Strategy("rate_limited"),
    }
    assert parse_strategy_map(" ; ") == {}
    with pytest.raises(LifecycleDefinitionError, match=f"{STRATEGY_ENV}: entry 'backoff'"):
        parse_strategy_map("backoff")


def test_resolution_order_code_then_platform_then_environment() -> None:
    def resolve(code: str | None, configured: dict[str, str], env: str) -> str:
        return str(
            resolve_strategy("Database", "example.com", code, configured, {STRATEGY_ENV: env})
        )

    assert resolve(None, {}, "") == "rate_limited"
    assert resolve("backoff", {}, "") == "backoff"
    assert resolve("backoff", {"Database": "immediate"}, "") == "immediate"
    assert resolve("backoff", {"*": "immediate"}, "") == "immediate"
    assert resolve("backoff", {"Cache": "immediate"}, "") == "backoff"
    assert resolve("backoff", {"Database": "immediate"}, "*=backoff(cap=1)") == "backoff(cap=1)"
    # within one source the most specific entry wins
    assert resolve(None, {}, "*=immediate; Database.example.com=backoff") == "backoff"
    assert resolve(None, {"Database": "immediate", "Database.example.com": "backoff"}, "") == (
        "backoff"
    )
