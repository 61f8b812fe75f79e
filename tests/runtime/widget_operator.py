"""A small operator over the test Widget kind, used by the end-to-end tests (in-process
and via ``kubewerk run``)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from kubewerk.client import CONFIGMAP
from kubewerk.runtime import Context, Manager, Result
from tests.client.models import Widget, WidgetStatus

FINALIZER = "test.kubewerk.dev/cleanup"


class Knobs:
    """Test controls shared with the reconcile function."""

    def __init__(self) -> None:
        self.cleanups: list[str] = []
        self.fail_cleanup: set[str] = set()
        self.delay = float(os.environ.get("WIDGET_DELAY", "0"))
        self.block: set[str] = set(filter(None, os.environ.get("WIDGET_BLOCK", "").split(",")))
        self.reconciled: list[str] = []


def build(knobs: Knobs | None = None, **manager_options: Any) -> Manager:
    """A manager with the Widget controller (owns ConfigMaps, finalizer, status, events)."""
    k = knobs or Knobs()
    manager_options.setdefault("probe_port", None)
    mgr = Manager(**manager_options)

    async def cleanup(w: Widget, ctx: Context) -> None:
        if w.name in k.fail_cleanup:
            raise RuntimeError("backend refused to drop the widget")
        k.cleanups.append(str(w.name))

    @mgr.reconciler(Widget, owns=[CONFIGMAP], max_concurrent_reconciles=4)
    async def reconcile(w: Widget, ctx: Context) -> Result:
        k.reconciled.append(str(w.name))
        if await ctx.finalize(w, FINALIZER, cleanup):
            return Result()
        if w.name in k.block:
            await asyncio.sleep(3600)  # simulate a reconcile that never finishes
        await ctx.create_or_update(
            w,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{w.name}-config"},
                "data": {"size": str(w.spec.size)},
            },
        )
        if k.delay:
            await asyncio.sleep(k.delay)
        if w.status is None:
            w.status = WidgetStatus()
        w.status.observed_size = w.spec.size
        w.status.phase = "Ready"
        ctx.set_condition(w, "Ready", True, "Reconciled", f"size {w.spec.size}")
        if await ctx.patch_status(w):
            ctx.event("Normal", "Reconciled", f"size {w.spec.size}")
        return Result()

    return mgr


def manager() -> Manager:
    """Entry point for ``kubewerk run tests.runtime.widget_operator:manager``."""
    return build(probe_port=None)
