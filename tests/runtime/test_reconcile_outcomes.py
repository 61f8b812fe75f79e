"""What a reconcile's outcome does to the queue and to controller-runtime's counters:
success, errors, terminal errors, conflicts, timeouts, and panics (the programming
errors Python raises where Go panics: counted as panics *and* as errors)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from kubewerk.client import ResourceType
from kubewerk.client.errors import Conflict
from kubewerk.runtime.controller import PANIC_EXCEPTIONS, Controller, TerminalError
from kubewerk.runtime.metrics import Metrics

WIDGET = ResourceType("example.dev", "v1", "Widget", "widgets")
KEY = "ns/w"


class FakeInformer:
    def __init__(self) -> None:
        self.rt = WIDGET
        self.stored = orjson.dumps(
            {
                "apiVersion": "example.dev/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": "ns"},
            }
        )

    def add_handler(self, handler: Any) -> None:
        pass

    def get_raw(self, key: str) -> bytes | None:
        return self.stored if key == KEY else None


class FakeCache:
    def __init__(self) -> None:
        self.inf = FakeInformer()

    def informer(self, kind: Any) -> FakeInformer:
        return self.inf


def bound(reconcile: Callable[[Any, Any], Any], **options: Any) -> tuple[Controller[Any], Metrics]:
    metrics = Metrics(process=False)
    ctrl: Controller[Any] = Controller("widget", WIDGET, reconcile, **options)
    ctrl.bind(None, FakeCache(), metrics, None)  # type: ignore[arg-type]
    return ctrl, metrics


def counters(metrics: Metrics) -> dict[str, float]:
    def value(name: str, **labels: str) -> float:
        return metrics.registry.get_sample_value(name, {"controller": "widget", **labels}) or 0.0

    return {
        "success": value("controller_runtime_reconcile_total", result="success"),
        "error": value("controller_runtime_reconcile_total", result="error"),
        "requeue": value("controller_runtime_reconcile_total", result="requeue"),
        "errors": value("controller_runtime_reconcile_errors_total"),
        "terminal": value("controller_runtime_terminal_reconcile_errors_total"),
        "panics": value("controller_runtime_reconcile_panics_total"),
    }


def raising(exc: BaseException) -> Callable[[Any, Any], Any]:
    async def reconcile(obj: Any, ctx: Any) -> None:
        raise exc

    return reconcile


async def buggy(obj: dict[str, Any], ctx: Any) -> None:
    obj["spec"]["replicas"]  # no spec: KeyError, a programming error


def conflict() -> Conflict:
    return Conflict(409, "Conflict", "the object has been modified", None)


SUCCESS = {
    "success": 1.0,
    "error": 0.0,
    "requeue": 0.0,
    "errors": 0.0,
    "terminal": 0.0,
    "panics": 0.0,
}
ERROR = {**SUCCESS, "success": 0.0, "error": 1.0, "errors": 1.0}
PANIC = {**ERROR, "panics": 1.0}


@pytest.mark.parametrize(
    ("reconcile", "expected", "retried"),
    [
        (raising(RuntimeError("backend not ready")), ERROR, True),
        (raising(ValueError("bad input")), ERROR, True),
        (raising(TerminalError("cannot be fixed by retrying")), {**ERROR, "terminal": 1.0}, False),
        (raising(conflict()), {**SUCCESS, "success": 0.0, "requeue": 1.0}, True),
        (buggy, PANIC, True),
        (raising(AttributeError("'NoneType' object has no attribute 'spec'")), PANIC, True),
        (raising(TypeError("'NoneType' object is not subscriptable")), PANIC, True),
        (raising(IndexError("list index out of range")), PANIC, True),
        (raising(ZeroDivisionError("division by zero")), PANIC, True),
        (raising(AssertionError()), PANIC, True),
        (raising(NameError("name 'x' is not defined")), PANIC, True),
        (raising(RecursionError("maximum recursion depth exceeded")), PANIC, True),
    ],
)
async def test_outcome_counters_and_retry(
    reconcile: Callable[[Any, Any], Any], expected: dict[str, float], retried: bool
) -> None:
    ctrl, metrics = bound(reconcile)
    await ctrl._process(KEY)
    assert counters(metrics) == expected
    assert (ctrl.queue.rate_limiter.num_requeues(KEY) > 0) is retried


async def test_success_and_timeout_are_not_panics() -> None:
    async def done(obj: Any, ctx: Any) -> None:
        return None

    ctrl, metrics = bound(done)
    await ctrl._process(KEY)
    assert counters(metrics) == SUCCESS

    async def slow(obj: Any, ctx: Any) -> None:
        await asyncio.sleep(5)

    ctrl, metrics = bound(slow, reconcile_timeout=0.01)
    await ctrl._process(KEY)
    assert counters(metrics) == ERROR


def test_panic_classes_are_programming_errors_only() -> None:
    # errors a reconcile reports on purpose (and the API errors it meets) are not panics
    for exc in (
        RuntimeError(),
        ValueError(),
        OSError(),
        TimeoutError(),
        conflict(),
        TerminalError(),
    ):
        assert not isinstance(exc, PANIC_EXCEPTIONS)
    for exc in (KeyError("k"), IndexError(), UnboundLocalError()):
        assert isinstance(exc, PANIC_EXCEPTIONS)
