"""The platform example (examples/platform_demo) end to end: the embedded API server in a
thread, the real kubectl, and the operator as a separate process (``python -m
kubewerk.cli run examples.platform_demo:platform``), as a user runs them.

- three tenants' full stacks, applied in one ``kubectl apply`` in shuffled order, all
  reach their ready phase; no object became ready before what it depends on (from the
  ``PhaseChanged`` Events' timestamps); the metrics on the operator's ``/metrics`` count
  exactly the transitions, objects and bus events of the run; deleting a Tenant tears
  its stack down in reverse dependency order (from the resourceVersions of the DELETED
  watch events, one global counter on the embedded server) and leaves nothing, the
  other tenants untouched;
- a cycle made by an edit is reported on each member and clears when an edit breaks it;
- the operator killed with SIGKILL half-way and started again converges the same way
  (every object takes its normal path, in dependency order, once);
- (test_platform_redis.py) two operator processes sharing a Redis Streams bus.

What depends on what is read from the models' refs (``references_of``), not listed here.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples.platform_demo.models import KINDS
from prometheus_client.parser import text_string_to_metric_families

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.model.ref_fields import references_of

from .conftest import KubectlRun, wait_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "examples" / "platform_demo"
CRDS = PLATFORM / "crds"
STACK = PLATFORM / "stack" / "acme.yaml"
TENANTS = ("acme", "globex", "initech")
TARGET = "examples.platform_demo:platform"

BY_NAME: dict[str, Any] = {k.__name__: k for k in KINDS}
READY: dict[str, set[str]] = {
    k.__name__: {p.value for p in k.kind_info().lifecycle.ready} for k in KINDS
}
"""Each kind's ready phases (Active; Succeeded for a Job)."""
# -- the stacks ---------------------------------------------------------------------------


def stack(tenant: str) -> list[dict[str, Any]]:
    """examples/platform_demo/stack/acme.yaml for ``tenant``, every namespaced object in the
    namespace named after it."""
    docs = [d for d in yaml.safe_load_all(STACK.read_text().replace("acme", tenant)) if d]
    for doc in docs:
        if doc["kind"] != "Tenant":
            doc["metadata"]["namespace"] = tenant
    return docs


def ident(kind: str, namespace: str | None, name: str) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped), as the kernel names objects."""
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def ident_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return ident(obj["kind"], meta.get("namespace"), meta["name"])


def platform_objects(docs: list[dict[str, Any]]) -> list[str]:
    return [ident_of(d) for d in docs if d["kind"] in BY_NAME]


def edges(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every (dependent, dependency) pair between platform objects of ``docs``, from the
    models' refs (a Secret has no phase and is left out)."""
    out = []
    for doc in docs:
        kind = BY_NAME.get(doc["kind"])
        if kind is None:
            continue
        namespace = doc["metadata"].get("namespace")
        for ref in references_of(kind):
            if ref.kind not in BY_NAME:
                continue
            for name, ref_namespace in ref.names(doc):
                target_ns = (ref_namespace or namespace) if ref.namespaced else None
                out.append((ident_of(doc), ident(ref.kind, target_ns, name)))
    return out


def write_manifest(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def install_crds(kc: KubectlRun) -> None:
    kc("apply", "-f", str(CRDS))
    kc("wait", "--for=condition=Established", "-f", str(CRDS), "--timeout=20s")


@pytest.fixture
def crds(kc: KubectlRun) -> None:
    """The platform's CRDs, applied with kubectl and Established."""
    install_crds(kc)


# -- reading the server -------------------------------------------------------------------


class Api:
    """Plain HTTP GETs against the embedded server (no authentication on loopback)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def get(self, path: str) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as resp:
                data: dict[str, Any] = json.loads(resp.read())
                return data
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def items(self, kind: Any, namespace: str | None = None) -> list[dict[str, Any]]:
        info = kind.kind_info()
        where = f"namespaces/{namespace}/" if namespace and info.scope == "Namespaced" else ""
        listed = self.get(f"/apis/{info.group}/{info.version}/{where}{info.plural}")
        items = (listed or {}).get("items", [])
        for item in items:
            item.setdefault("kind", info.kind)
        return items

    def objects(self, namespace: str | None = None) -> dict[str, dict[str, Any]]:
        """Every platform object (in ``namespace``, Tenants aside, when given)."""
        out = {}
        for kind in KINDS:
            if namespace and kind.kind_info().scope == "Cluster":
                continue
            for item in self.items(kind, namespace):
                out[ident_of(item)] = item
        return out

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        listed = self.get("/apis/events.k8s.io/v1/events") or {}
        return [e for e in listed.get("items", []) if reason is None or e.get("reason") == reason]


def phase(obj: dict[str, Any]) -> str | None:
    return (obj.get("status") or {}).get("phase")


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def is_ready(obj: dict[str, Any]) -> bool:
    return phase(obj) in READY[obj["kind"]]


def all_ready(api: Api, expected: list[str]) -> bool:
    objects = api.objects()
    return all(name in objects and is_ready(objects[name]) for name in expected)


def ready_times(api: Api) -> dict[str, datetime]:
    """When each object first entered a ready phase, from its PhaseChanged Events
    (``eventTime``, microseconds, recorded by the operator right after the write)."""
    out: dict[str, datetime] = {}
    for event in api.events("PhaseChanged"):
        regarding = event["regarding"]
        kind = regarding["kind"]
        moved = event["note"].split(":", 1)[0]
        target = moved.split(" → ")[-1]
        if kind not in READY or target not in READY[kind]:
            continue
        name = ident(kind, regarding.get("namespace"), regarding["name"])
        stamp = datetime.fromisoformat(event["eventTime"].replace("Z", "+00:00"))
        out[name] = min(stamp, out.get(name, stamp))
    return out


# -- the watch log: every change of every platform object, in resourceVersion order -------


@dataclass(frozen=True)
class Change:
    rv: int
    type: str
    name: str
    phase: str | None


class ChangeLog:
    """Watches every platform kind from the current resourceVersion, on a thread of its
    own; ``changes`` holds what it saw. On the embedded server resourceVersion is one
    global counter, so changes of different kinds are ordered by it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.changes: list[Change] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None
        self._thread.start()
        if not self._ready.wait(10) or self.error is not None:
            pytest.fail(f"the watch log did not start: {self.error!r}")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:
            self.error = exc
            self._ready.set()

    async def _main(self) -> None:
        from kubewerk.client import Client

        self._stop = asyncio.Event()
        async with Client.from_url(self.url) as client:
            start = (await client.list(KINDS[0])).resource_version
            tasks = [asyncio.create_task(self._watch(client, k, start)) for k in KINDS]
            self._ready.set()
            await self._stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch(self, client: Any, kind: Any, rv: str) -> None:
        while True:  # a watch the server ends is resumed where it stopped
            async for event in client.watch(kind, resource_version=rv):
                if event.type == "BOOKMARK":
                    rv = event.resource_version or rv
                    continue
                raw = dict(event.raw)
                raw.setdefault("kind", kind.kind_info().kind)
                rv = event.resource_version
                with self._lock:
                    self.changes.append(Change(int(rv), event.type, ident_of(raw), phase(raw)))

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def snapshot(self) -> list[Change]:
        with self._lock:
            return sorted(self.changes, key=lambda c: c.rv)

    def first_ready(self) -> dict[str, int]:
        """The resourceVersion at which each object was first seen in a ready phase."""
        out: dict[str, int] = {}
        for change in self.snapshot():
            kind = change.name.split("/", 1)[0]
            if change.phase in READY[kind] and change.name not in out:
                out[change.name] = change.rv
        return out

    def deleted(self) -> dict[str, int]:
        """The resourceVersion of each object's DELETED event."""
        return {c.name: c.rv for c in self.snapshot() if c.type == "DELETED"}

    def phases(self) -> dict[str, list[str]]:
        """Each object's phases in the order they were written (repeats folded)."""
        out: dict[str, list[str]] = defaultdict(list)
        for change in self.snapshot():
            seen = out[change.name]
            if (
                change.phase is not None
                and change.type != "DELETED"
                and seen[-1:] != [change.phase]
            ):
                seen.append(change.phase)
        return dict(out)


@pytest.fixture
def change_log(tserver: EmbeddedServer, crds: None) -> Iterator[ChangeLog]:
    log = ChangeLog(tserver.url)
    try:
        yield log
    finally:
        log.stop()


# -- the operator as a process -------------------------------------------------------------

PROBES = re.compile(r"probes and metrics on (http://\S+) ")


class Operator:
    """``python -m kubewerk.cli run examples.platform_demo:platform`` against ``kubeconfig``,
    its log in a file, probes on a free port."""

    def __init__(
        self, kubeconfig: Path, log: Path, env: dict[str, str], args: tuple[str, ...]
    ) -> None:
        self.log = log
        self._log_file = log.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "kubewerk.cli", "run", TARGET,
                "--kubeconfig", str(kubeconfig),
                "--probe-address", "127.0.0.1:0",
                *args,
            ],
            cwd=REPO,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )  # fmt: skip
        self._url: str | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def url(self) -> str:
        """The probe server's base URL (waits for the operator to log it)."""
        if self._url is None:

            def logged() -> str | None:
                if self.proc.poll() is not None:
                    pytest.fail(f"the operator exited ({self.proc.returncode}):\n{self.text()}")
                found = PROBES.search(self.text())
                return found.group(1) if found else None

            self._url = wait_until(logged, timeout=30)
        return self._url

    def metrics(self) -> Metrics:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as resp:
            return Metrics(resp.read().decode())

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM, and the exit code (killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log_file.close()
        return self.proc.returncode


@dataclass
class Metrics:
    """A Prometheus text exposition, read with prometheus-client's parser."""

    text: str
    samples: list[tuple[str, dict[str, str], float]] = field(init=False)

    def __post_init__(self) -> None:
        self.samples = [
            (s.name, dict(s.labels), s.value)
            for family in text_string_to_metric_families(self.text)
            for s in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels``."""
        return sum(
            v
            for n, ls, v in self.samples
            if n == name and all(ls.get(k) == x for k, x in labels.items())
        )

    def series(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        return {tuple(sorted(ls.items())): v for n, ls, v in self.samples if n == name}


class Operators:
    """Starts operators; every one still running is stopped at teardown (its log is
    printed when the test failed)."""

    def __init__(self, kubeconfig: Path, tmp: Path) -> None:
        self.kubeconfig = kubeconfig
        self.tmp = tmp
        self.started: list[Operator] = []

    def start(self, *args: str, delay: float = 0.05, **env: str) -> Operator:
        log = self.tmp / f"operator-{len(self.started)}.log"
        full = {"KUBEWERK_PLATFORM_DELAY": str(delay), "KUBEWERK_PLATFORM_WORKERS": "4", **env}
        op = Operator(self.kubeconfig, log, full, args)
        self.started.append(op)
        return op


@pytest.fixture
def operators(kubeconfig: Path, tmp_path: Path) -> Iterator[Operators]:
    """Operators for this test; their logs are printed at teardown (pytest shows them
    when the test failed)."""
    ops = Operators(kubeconfig, tmp_path)
    try:
        yield ops
    finally:
        for op in ops.started:
            op.stop()
            print(f"--- operator {op.pid} (exit {op.proc.returncode}) ---\n{op.text()[-20000:]}")


# -- tests ----------------------------------------------------------------------------------


def apply_stacks(
    kc: KubectlRun, tmp: Path, tenants: tuple[str, ...], seed: int
) -> list[dict[str, Any]]:
    """Create the tenants' namespaces and apply all their stacks in one shuffled file."""
    docs = [doc for tenant in tenants for doc in stack(tenant)]
    random.Random(seed).shuffle(docs)
    for tenant in tenants:
        kc("create", "namespace", tenant)
    out = kc("apply", "-f", str(write_manifest(tmp / "stacks.yaml", docs))).stdout
    assert out.count(" created") == len(docs), out
    return docs


def test_three_tenants_converge_in_dependency_order_and_tear_down_in_reverse(
    kc: KubectlRun,
    tserver: EmbeddedServer,
    tmp_path: Path,
    operators: Operators,
    change_log: ChangeLog,
) -> None:
    api = Api(tserver.url)
    op = operators.start()
    docs = apply_stacks(kc, tmp_path, TENANTS, seed=1201)
    expected = platform_objects(docs)
    assert len(expected) == 3 * 18
    wait_until(lambda: all_ready(api, expected), timeout=45, interval=0.1)

    # no object became ready before what it depends on: from the Events' timestamps ...
    def recorded() -> dict[str, datetime] | None:
        times = ready_times(api)
        return times if set(expected) <= set(times) else None

    times = wait_until(recorded, timeout=10)
    pairs = edges(docs)
    assert len(pairs) == 3 * 31
    for dependent, dependency in pairs:
        assert times[dependent] > times[dependency], (dependent, dependency)
    # ... and from the watch (the writes themselves, in resourceVersion order)
    first = change_log.first_ready()
    for dependent, dependency in pairs:
        assert first[dependent] > first[dependency], (dependent, dependency)

    # every object provisioned once, by the simulated provider
    objects = api.objects()
    for name in expected:
        status = objects[name]["status"]
        assert status["provisionedGeneration"] == objects[name]["metadata"]["generation"], name
        assert status["providerId"].startswith(objects[name]["kind"].lower() + "-"), name
    web = objects["Application/globex/shop"]["status"]
    assert web["endpoint"] == "https://shop.globex.example.com/"

    # the metrics count exactly this run
    per_stack = Counter(d["kind"] for d in stack("acme") if d["kind"] in BY_NAME)
    changes = 3 * (len(expected) // 3 + 1)  # a Job moves twice: Pending → Running → Succeeded

    def delivered() -> Metrics | None:
        m = op.metrics()
        done = m.value("kubewerk_bus_events_total", type="PhaseChanged", status="delivered")
        return m if done == changes and m.value("kubewerk_bus_queue_length") == 0 else None

    m = wait_until(delivered, timeout=10)
    transitions = m.series("kubewerk_phase_transitions_total")
    want = {}
    for kind, count in per_stack.items():
        label = f"{kind}.platform.kubewerk.dev"
        moves = [("Pending", "Running"), ("Running", "Succeeded")] if kind == "Job" else []
        for source, target in moves or [("Pending", "Active")]:
            want[(("from", source), ("kind", label), ("to", target))] = 3.0 * count
    assert {k: v for k, v in transitions.items() if v} == want
    for kind, count in per_stack.items():
        label = f"{kind}.platform.kubewerk.dev"
        ready = next(iter(READY[kind]))
        assert m.value("kubewerk_objects", kind=label) == 3 * count
        assert m.value("kubewerk_objects", kind=label, phase=ready) == 3 * count
        waited = m.value("kubewerk_phase_duration_seconds_count", kind=label, phase="Pending")
        assert waited == 3 * count, kind
    bus = m.series("kubewerk_bus_events_total")
    assert {k: v for k, v in bus.items() if v} == {
        (("status", "published"), ("type", "PhaseChanged")): changes,
        (("status", "delivered"), ("type", "PhaseChanged")): changes,
        (("status", "published"), ("type", "DependenciesChanged")): 3 * 17.0,
    }
    assert m.value("kubewerk_bus_processing_seconds_count", type="PhaseChanged") == changes
    reconciles = m.series("controller_runtime_reconcile_total")
    controllers = {dict(k)["controller"] for k in reconciles}
    assert controllers == {k.__name__.lower() for k in KINDS}
    assert m.value("controller_runtime_reconcile_total", result="error") == 0
    assert m.value("controller_runtime_reconcile_errors_total") == 0
    total = m.value("controller_runtime_reconcile_total")
    assert total >= len(expected)
    print(f"{total:.0f} reconciles for {len(expected)} objects")

    # deleting a Tenant tears its stack down, leaves first, and leaves nothing
    kc("delete", "tenant", "acme", timeout=60)
    wait_until(lambda: not api.objects("acme"), timeout=30)
    gone = change_log.deleted()
    acme = [
        d for d in docs if d["metadata"].get("namespace") == "acme" or ident_of(d) == "Tenant/acme"
    ]
    for name in platform_objects(acme):
        assert name in gone, name
    for dependent, dependency in edges(acme):
        assert gone[dependent] < gone[dependency], (dependent, dependency)
    assert api.get("/api/v1/namespaces/acme/secrets/shop-credentials") is not None  # not ours
    rest = [n for n in expected if "acme" not in n]
    assert all_ready(api, rest) and not any(n in gone for n in rest)

    def torn_down() -> Metrics | None:
        m = op.metrics()
        return m if m.value("kubewerk_objects", kind="Tenant.platform.kubewerk.dev") == 2 else None

    m = wait_until(torn_down, timeout=10)
    for kind, count in per_stack.items():
        label = f"{kind}.platform.kubewerk.dev"
        assert m.value("kubewerk_objects", kind=label) == 2 * count, kind
        deleting = m.value("kubewerk_phase_transitions_total", kind=label, to="Deleting")
        assert deleting == count, kind  # every kind has a teardown: all go through Deleting
    assert op.stop() == 0


def test_a_cycle_made_by_an_edit_is_reported_on_each_member_and_clears(
    kc: KubectlRun, tserver: EmbeddedServer, tmp_path: Path, operators: Operators, crds: None
) -> None:
    api = Api(tserver.url)
    operators.start()
    docs = apply_stacks(kc, tmp_path, ("acme",), seed=7)
    wait_until(lambda: all_ready(api, platform_objects(docs)), timeout=30, interval=0.1)

    kc("patch", "database", "orders", "-n", "acme", "--type=merge",
       "-p", '{"spec":{"replicaOf":{"name":"orders-replica"}}}')  # fmt: skip
    primary, replica = "Database/acme/orders", "Database/acme/orders-replica"
    cycles = {
        primary: f"dependency cycle: {primary} -> {replica} -> {primary}",
        replica: f"dependency cycle: {replica} -> {primary} -> {replica}",
    }

    def reported() -> bool:
        objects = api.objects("acme")
        return all(
            (c := condition(objects[name], "DependenciesReady")).get("reason") == "DependencyCycle"
            and c["status"] == "False"
            and c["message"] == message
            for name, message in cycles.items()
        )

    wait_until(reported, timeout=15)
    warnings = {
        (e["regarding"]["name"], e["note"])
        for e in api.events("DependencyCycle")
        if e["type"] == "Warning"
    }
    assert warnings == {("orders", cycles[primary]), ("orders-replica", cycles[replica])}
    objects = api.objects("acme")
    assert phase(objects[primary]) == phase(objects[replica]) == "Active"  # they keep it
    shop = condition(objects["Application/acme/shop"], "DependenciesReady")
    assert shop["message"] == f"waiting for {primary} (waiting for its own dependencies)"
    graph = subprocess.run(
        [sys.executable, "-m", "kubewerk.cli", "graph", "--kubeconfig",
         str(tserver.write_kubeconfig(tmp_path / "graph-kubeconfig")), "-n", "acme"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert graph.returncode == 1, graph.stderr
    assert f"  {primary} -> {replica} -> {primary}" in graph.stdout

    kc("patch", "database", "orders", "-n", "acme", "--type=json",
       "-p", '[{"op":"remove","path":"/spec/replicaOf"}]')  # fmt: skip

    def cleared() -> bool:
        objects = api.objects("acme")
        return all(
            condition(objects[n], "DependenciesReady").get("reason") == "AllReady"
            and is_ready(objects[n])
            for n in (primary, replica, "Application/acme/shop")
        )

    wait_until(cleared, timeout=15)
    resolved = {e["regarding"]["name"] for e in api.events("DependencyCycleResolved")}
    assert resolved == {"orders", "orders-replica"}
    # the primary's spec changed twice while it waited: provisioned again once it could
    notes = [
        e["note"]
        for e in api.events("PhaseChanged")
        if e["regarding"]["name"] == "orders" and e["regarding"]["kind"] == "Database"
    ]
    assert "Active → Reconciling: SpecChanged" in notes
    orders = api.objects("acme")[primary]
    assert orders["status"]["provisionedGeneration"] == orders["metadata"]["generation"] == 3


def test_an_operator_killed_half_way_and_started_again_converges_the_same_way(
    kc: KubectlRun,
    tserver: EmbeddedServer,
    tmp_path: Path,
    operators: Operators,
    change_log: ChangeLog,
) -> None:
    api = Api(tserver.url)
    first = operators.start(delay=0.25)
    docs = apply_stacks(kc, tmp_path, TENANTS, seed=99)
    expected = platform_objects(docs)

    def half_way() -> bool:
        objects = api.objects()
        ready = sum(1 for n in expected if n in objects and is_ready(objects[n]))
        return len(expected) // 3 <= ready < len(expected)

    wait_until(half_way, timeout=30, interval=0.02)
    first.kill()
    assert first.proc.returncode == -signal.SIGKILL
    before = sum(1 for o in api.objects().values() if is_ready(o))
    assert before < len(expected)

    second = operators.start(delay=0.25)
    wait_until(lambda: all_ready(api, expected), timeout=45, interval=0.1)

    # every object took its normal path once: Pending → Active (Pending → Running →
    # Succeeded for a Job); nothing failed or went through Reconciling
    paths = change_log.phases()
    for name in expected:
        kind = name.split("/", 1)[0]
        normal = ["Pending", "Running", "Succeeded"] if kind == "Job" else ["Pending", "Active"]
        seen = paths[name]
        assert seen == normal[len(normal) - len(seen) :], (name, seen)
    objects = api.objects()
    for name in expected:
        assert objects[name]["status"]["provisionedGeneration"] == 1, name
    first_ready = change_log.first_ready()
    for dependent, dependency in edges(docs):
        assert first_ready[dependent] > first_ready[dependency], (dependent, dependency)
    m = second.metrics()
    moved = sum(v for v in m.series("kubewerk_phase_transitions_total").values())
    assert 0 < moved < 3 * 19  # the rest was done before the kill
    assert m.value("kubewerk_phase_transitions_total", to="Failed") == 0
    assert second.stop() == 0
