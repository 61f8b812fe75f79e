"""LoopCounter and LoopHistogram expose exactly what prometheus-client's Counter and
Histogram expose for the same observations."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kubewerk.runtime.metrics import (
    RECONCILE_BUCKETS,
    WORKQUEUE_BUCKETS,
    LoopCounter,
    LoopHistogram,
    Metrics,
)

AMOUNTS = [
    0.0,
    1e-9,
    1e-8,
    1e-8 * (1 + 1e-12),
    0.004,
    0.005,
    0.0050001,
    0.3,
    1.0,
    59.9,
    60.0,
    61.0,
    math.inf,
    math.nan,
    7e3,
]


def _exposition(registry: CollectorRegistry) -> tuple[list[str], list[str]]:
    """(lines without ``_created`` samples, names of the ``_created`` samples)."""
    lines = generate_latest(registry).decode().splitlines()
    created = [
        line.split()[0]
        for line in lines
        if "_created{" in line or line.split()[0].endswith("_created")
    ]
    rest = [line for line in lines if line.split()[0] not in created]
    return rest, created


@pytest.mark.parametrize("buckets", [RECONCILE_BUCKETS, WORKQUEUE_BUCKETS, (1.0, 2.0)])
def test_histogram_exposition_matches_prometheus_client(buckets: tuple[float, ...]) -> None:
    stock_reg, loop_reg = CollectorRegistry(), CollectorRegistry()
    stock = Histogram("h_seconds", "help text", ["controller"], buckets=buckets, registry=stock_reg)
    loop = LoopHistogram(
        "h_seconds", "help text", ["controller"], buckets=buckets, registry=loop_reg
    )
    for family in (stock, loop):
        for i, amount in enumerate(AMOUNTS):
            family.labels("a" if i % 3 else "b").observe(amount)
        family.labels("untouched")
    stock_lines, stock_created = _exposition(stock_reg)
    loop_lines, loop_created = _exposition(loop_reg)
    assert loop_lines == stock_lines
    assert loop_created == stock_created and len(loop_created) == 3


def test_counter_exposition_matches_prometheus_client() -> None:
    stock_reg, loop_reg = CollectorRegistry(), CollectorRegistry()
    stock = Counter("things", "help text", ["controller", "result"], registry=stock_reg)
    loop = LoopCounter("things", "help text", ["controller", "result"], registry=loop_reg)
    for family in (stock, loop):
        family.labels("a", "success").inc()
        family.labels("a", "success").inc(2.5)
        family.labels("a", "error").inc(0)
        family.labels("b", "success")
    stock_lines, stock_created = _exposition(stock_reg)
    loop_lines, loop_created = _exposition(loop_reg)
    assert loop_lines == stock_lines
    assert loop_created == stock_created and len(loop_created) == 3
    assert (
        loop_reg.get_sample_value("things_total", {"controller": "a", "result": "success"}) == 3.5
    )


def test_loop_metrics_refuse_what_prometheus_client_refuses() -> None:
    reg = CollectorRegistry()
    counter = LoopCounter("c", "h", ["x"], registry=reg)
    histogram = LoopHistogram("h", "h", ["x"], registry=reg)
    with pytest.raises(ValueError, match="missing label values"):
        counter.inc()
    with pytest.raises(ValueError, match="missing label values"):
        histogram.observe(1.0)
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("a").inc(-1)
    child = counter.labels("a")
    child.inc(3)
    child.reset()
    assert reg.get_sample_value("c_total", {"x": "a"}) == 0.0


def test_every_family_keeps_its_name_and_type() -> None:
    m = Metrics(process=False)
    for family in (
        m.reconcile_total,
        m.reconcile_errors,
        m.terminal_errors,
        m.reconcile_panics,
        m.wq_adds,
        m.wq_retries,
    ):
        assert isinstance(family, Counter)
    for hist in (m.reconcile_time, m.wq_latency, m.wq_work):
        assert isinstance(hist, Histogram)
    m.reconcile_total.labels("c", "success").inc()
    m.reconcile_time.labels("c").observe(0.002)
    out = m.exposition().decode()
    assert "# TYPE controller_runtime_reconcile_total counter" in out
    assert 'controller_runtime_reconcile_total{controller="c",result="success"} 1.0' in out
    assert "# TYPE controller_runtime_reconcile_time_seconds histogram" in out
    assert 'controller_runtime_reconcile_time_seconds_bucket{controller="c",le="0.005"} 1.0' in out
    assert 'controller_runtime_reconcile_time_seconds_sum{controller="c"} 0.002' in out
