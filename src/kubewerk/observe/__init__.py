"""Operating kubewerk: the health dashboard and the kubectl plugin's views.

- :mod:`kubewerk.observe.health` — what is wrong with one object (stuck reasons, Ready);
- :mod:`kubewerk.observe.state` — the watched kinds, objects, Events, owners and the
  dependency graph of a cluster, kept as changes arrive;
- :mod:`kubewerk.observe.watcher` — feeding that state from a cluster, once or by watches;
- :mod:`kubewerk.observe.views` — the summary, object and graph views as JSON-ready data;
- :mod:`kubewerk.observe.resourcenames` — kind names as kubectl users type them, resolved
  from discovery as kubectl resolves them;
- :mod:`kubewerk.observe.metrics` — controller-runtime metrics scraped into time series;
- :mod:`kubewerk.observe.app` and :mod:`kubewerk.observe.server` — the dashboard as an
  ASGI app and served by uvicorn (``kubewerk dashboard``);
- :mod:`kubewerk.observe.text` — the plugin's text screens (``kubectl kubewerk``).

See docs/observe.md.
"""

from kubewerk.observe.app import DashboardApp
from kubewerk.observe.health import Stuck, ready_of, stuck_reasons
from kubewerk.observe.metrics import MetricsSampler, parse_exposition
from kubewerk.observe.server import DashboardServer
from kubewerk.observe.state import ClusterState, KindInfo, KindKey
from kubewerk.observe.views import graph_view, lookup_kind, object_view, resolve_kind, summary
from kubewerk.observe.watcher import ClusterWatcher, snapshot

__all__ = [
    "ClusterState",
    "ClusterWatcher",
    "DashboardApp",
    "DashboardServer",
    "KindInfo",
    "KindKey",
    "MetricsSampler",
    "Stuck",
    "graph_view",
    "lookup_kind",
    "object_view",
    "parse_exposition",
    "ready_of",
    "resolve_kind",
    "snapshot",
    "stuck_reasons",
    "summary",
]
