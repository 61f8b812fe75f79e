"""The simulated cluster: fake nodes, a scheduler, kubelets and the workload controllers,
running inside the embedded API server (``EmbeddedServer(simulate=...)``,
``kubewerk up --simulate``). See docs/simulate.md."""

from kubewerk.apiserver.simulate.clock import Clock, ManualClock, SystemClock
from kubewerk.apiserver.simulate.config import (
    FAIL_ANNOTATION,
    RUN_SECONDS_ANNOTATION,
    NodePool,
    SimulationConfig,
)
from kubewerk.apiserver.simulate.simulation import Simulation

__all__ = [
    "FAIL_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "Clock",
    "ManualClock",
    "NodePool",
    "Simulation",
    "SimulationConfig",
    "SystemClock",
]
