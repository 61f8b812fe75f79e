"""A typed model shared by the client and runtime tests."""

from __future__ import annotations

from kubewerk.model import Conditions, KubeModel, Resource


class WidgetSpec(KubeModel):
    """Desired state."""

    size: int = 1
    color: str | None = None


class WidgetStatus(KubeModel):
    """Observed state."""

    phase: str | None = None
    observed_size: int | None = None
    conditions: Conditions | None = None


class Widget(Resource[WidgetSpec, WidgetStatus], group="test.kubewerk.dev"):
    """A widget."""
