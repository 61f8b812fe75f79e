"""Lifecycle kernel benchmark: the platform example against hand-written dependency handling.

    .venv/bin/python benchmarks/lifecycle.py     # --objects-per-kind 200 --requeue-after 1,5
    .venv/bin/python benchmarks/lifecycle.py --objects-per-kind 50 --repeat 3

The platform example (``examples/platform_demo``: 17 kinds) with ``--objects-per-kind`` tenant
stacks: stack *i* is ``examples/platform_demo/stack/acme.yaml`` for tenant ``tNNN`` in its own
namespace, without the replica Database, so every kind has exactly one object per stack
(200 stacks: 17 x 200 = 3,400 objects, plus a Secret per stack that a CredentialBinding
names). Each stack's objects form the example's graph: 27 refs between them, eight
levels from the Tenant down to the Schedule (Tenant -> Environment -> DNSRecord ->
Certificate -> Route -> Application -> Job -> Schedule).

Contenders, each run against its own embedded API server (memory store, its own process,
uvloop; a fresh one per run, since Tenants are cluster-scoped and an operator watches
every namespace):

- ``kernel``: the example as users run it, ``kubewerk run examples.platform_demo:platform``,
  the lifecycle kernel's dependency engine deciding when an object may be provisioned;
- ``hand-written N s``: ``benchmarks/lifecycle_baseline.py``, the same 17 kinds, the
  same simulated provider, finalizer, phases and Events, on ``kubewerk.runtime`` alone:
  one plain controller per kind that reads the objects its refs name and, while one is
  not ready, writes Pending and returns ``Result(requeue_after=N)`` (``--requeue-after``;
  several values give several contenders).

Both run the provider with the same delay (``--delay``, the example's
``KUBEWERK_PLATFORM_DELAY``, 0.2 s by default as in the example) and the same workers per
kind (``--workers``, ``KUBEWERK_PLATFORM_WORKERS``, 4 as in the example). For each
contender the driver starts the server, installs the example's CRDs, starts the operator
and waits for its ``/readyz``, creates the namespaces, then creates all stacks' objects
at once in one shuffled order (the same order for every contender; 64 creates in
flight) and watches every kind. Reported:

- *time*: from the first create to the moment the driver's watch saw the last object
  reach its ready phase (Active; Succeeded for a Job);
- *reconciles*: ``controller_runtime_reconcile_total`` summed over the operator's
  controllers from its ``/metrics``, read once nothing has reconciled for 2 s after
  convergence (the count at convergence is printed too), and per object;
- *patches* and *Events*: the server's ``apiserver_request_total`` for PATCH (status and
  finalizer writes; only the operator patches) and for POST of events, per object;
- *peak RSS*: the operator process's ``ru_maxrss`` (``wait4``);
- *order*: how many of the refs had their dependent become ready before what it names
  (from the resourceVersions of the watch events, one global counter on the embedded
  server); 0 for a correct operator.

Medians over ``--repeat`` rounds (contenders alternate within a round); the ratios
hand-written / kernel for reconciles and time. Then the lifecycle bus's throughput
(``benchmarks/bus.py``'s in-process measurement: one trivial handler, uvloop, best of
``--bus-rounds``) against a bare ``asyncio.Queue`` in the same run and the 50k events/s
target. Targets (issue 12): <= 3 reconciles per object for the kernel; >= 5x fewer
reconciles than the hand-written baseline, and faster convergence; bus >= 50k events/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(1, str(REPO))

import bus as bus_bench  # noqa: E402  benchmarks/bus.py
from examples.platform_demo.models import KINDS  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from kubewerk.client import Client, ResourceType  # noqa: E402
from kubewerk.client.resources import resource_type_of  # noqa: E402
from kubewerk.client.watch import Listed, list_watch  # noqa: E402
from kubewerk.model.ref_fields import references_of  # noqa: E402

PY = sys.executable
CRDS = REPO / "examples" / "platform_demo" / "crds"
STACK = REPO / "examples" / "platform_demo" / "stack" / "acme.yaml"
CRD_TYPE = ResourceType(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
BY_NAME: dict[str, Any] = {k.__name__: k for k in KINDS}
READY: dict[str, frozenset[str]] = {
    k.__name__: frozenset(p.value for p in k.kind_info().lifecycle.ready) for k in KINDS
}
"""Each kind's ready phases (Active; Succeeded for a Job)."""

SERVER = textwrap.dedent(
    """
    import asyncio, sys, uvloop
    from kubewerk.apiserver.server import EmbeddedServer
    async def main():
        async with EmbeddedServer("memory") as srv:
            srv.write_kubeconfig(sys.argv[1])
            print(srv.url, flush=True)
            await asyncio.Event().wait()
    uvloop.run(main())
    """
)


# -- the objects ------------------------------------------------------------------------


def stacks(count: int) -> list[dict[str, Any]]:
    """``count`` copies of the example's tenant stack, one per tenant ``tNNN`` and its
    namespace, without the replica Database: one object of each kind per stack, plus
    the Secret its CredentialBinding names."""
    template = STACK.read_text()
    docs: list[dict[str, Any]] = []
    for i in range(count):
        tenant = f"t{i:03d}"
        for doc in yaml.safe_load_all(template.replace("acme", tenant)):
            if not doc or (doc["kind"] == "Database" and "replicaOf" in doc["spec"]):
                continue
            if doc["kind"] != "Tenant":
                doc["metadata"]["namespace"] = tenant
            docs.append(doc)
    return docs


def ident(kind: str, namespace: str | None, name: str) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def ident_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return ident(obj["kind"], meta.get("namespace"), meta["name"])


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


# -- watching ---------------------------------------------------------------------------


class Tracker:
    """Watches every platform kind and records when (and at which resourceVersion) each
    expected object was first seen in its ready phase."""

    def __init__(self, client: Client, expected: set[str]) -> None:
        self.client = client
        self.expected = expected
        self.ready_at: dict[str, float] = {}
        self.ready_rv: dict[str, int] = {}
        self.converged = asyncio.Event()
        self.converged_at = 0.0
        self.listed = 0
        self.all_listed = asyncio.Event()

    def _see(self, kind: str, obj: dict[str, Any]) -> None:
        status = obj.get("status")
        if not status or status.get("phase") not in READY[kind]:
            return
        meta = obj["metadata"]
        key = ident(kind, meta.get("namespace"), meta["name"])
        if key in self.ready_at or key not in self.expected:
            return
        self.ready_at[key] = time.perf_counter()
        self.ready_rv[key] = int(meta["resourceVersion"])
        if len(self.ready_at) == len(self.expected):
            self.converged_at = self.ready_at[key]
            self.converged.set()

    async def _watch(self, kind: Any) -> None:
        name = kind.__name__
        async for item in list_watch(self.client, resource_type_of(kind)):
            if isinstance(item, Listed):
                for obj in item.items:
                    self._see(name, obj)
                self.listed += 1
                if self.listed == len(KINDS):
                    self.all_listed.set()
            elif item.type in ("ADDED", "MODIFIED"):
                self._see(name, item.raw or item.object)

    def start(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._watch(kind)) for kind in KINDS]


# -- processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def total(found: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    return sum(
        v for n, ls, v in found if n == name and all(ls.get(k) == x for k, x in labels.items())
    )


def wait4(proc: subprocess.Popen[bytes]) -> tuple[int, int]:
    """Reap the child; returns (exit status, peak RSS in KiB)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status
    return status, usage.ru_maxrss


@dataclass
class Contender:
    name: str
    target: str
    env: dict[str, str]
    pythonpath: list[str] = field(default_factory=list)


@dataclass
class Run:
    name: str
    ok: bool
    ready: int
    created_s: float
    converge_s: float
    reconciles_at_converged: float
    reconciles: float
    conflicts: float
    errors: float
    patches: float
    events: float
    rss_mib: float
    order_violations: int
    by_kind: dict[str, dict[str, float]]
    """Reconciles per controller (the kind, lower case) and result."""


def by_kind(found: list[tuple[str, dict[str, str], float]]) -> dict[str, dict[str, float]]:
    """``controller_runtime_reconcile_total`` by controller and result."""
    out: dict[str, dict[str, float]] = {}
    for name, labels, value in found:
        if name == "controller_runtime_reconcile_total" and value:
            out.setdefault(labels["controller"], {})[labels["result"]] = value
    return out


async def start_server(kubeconfig: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [PY, "-c", SERVER, str(kubeconfig)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = await asyncio.to_thread(server.stdout.readline)
    if not url.strip():
        raise RuntimeError("the embedded server did not start")
    return server, url.strip()


def stop_server(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


async def install_crds(client: Client) -> None:
    names = []
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        await client.create(crd)
        names.append(crd["metadata"]["name"])
    for name in names:
        for _ in range(500):
            crd = await client.get(CRD_TYPE, name)
            conditions = (crd.get("status") or {}).get("conditions", [])
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            await asyncio.sleep(0.02)
        else:
            raise RuntimeError(f"CRD {name} not established")


async def create_all(client: Client, docs: list[dict[str, Any]], concurrency: int) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def one(doc: dict[str, Any]) -> None:
        async with sem:
            await client.create(doc)

    await asyncio.gather(*(one(doc) for doc in docs))


async def settled_metrics(
    url: str, quiet: float, limit: float
) -> list[tuple[str, dict[str, str], float]]:
    """The operator's metrics once its reconcile count has not moved for ``quiet`` s."""
    deadline = time.monotonic() + limit
    last: float | None = None
    since = time.monotonic()
    while True:
        _, text = await asyncio.to_thread(http_get, url + "/metrics")
        found = samples(text)
        count = total(found, "controller_runtime_reconcile_total")
        now = time.monotonic()
        if count != last:
            last, since = count, now
        elif now - since >= quiet or now > deadline:
            return found
        await asyncio.sleep(0.25)


async def run_contender(
    contender: Contender,
    docs: list[dict[str, Any]],
    namespaces: list[str],
    pairs: list[tuple[str, str]],
    args: argparse.Namespace,
    tmp: Path,
) -> Run:
    kubeconfig = tmp / f"kubeconfig-{contender.name.replace(' ', '-')}"
    server, url = await start_server(kubeconfig)
    port = free_port()
    probe = f"http://127.0.0.1:{port}"
    log = (tmp / f"{contender.name.replace(' ', '-')}.log").open("w")
    proc: subprocess.Popen[bytes] | None = None
    tasks: list[asyncio.Task[None]] = []
    try:
        async with Client.from_url(url, timeout=120) as client:
            await install_crds(client)
            env = {
                **os.environ,
                "KUBEWERK_PLATFORM_DELAY": str(args.delay),
                "KUBEWERK_PLATFORM_WORKERS": str(args.workers),
                "PYTHONPATH": os.pathsep.join(
                    [*contender.pythonpath, str(REPO), os.environ.get("PYTHONPATH", "")]
                ),
                **contender.env,
            }
            argv = [
                PY, "-m", "kubewerk.cli", "run", contender.target,
                "--kubeconfig", str(kubeconfig),
                "--probe-address", f"127.0.0.1:{port}",
                "--log-level", "warning",
            ]  # fmt: skip
            proc = subprocess.Popen(
                argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
            deadline = time.monotonic() + 60
            while (await asyncio.to_thread(http_get, probe + "/readyz"))[0] != 200:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(
                        f"{contender.name}: the operator did not become ready:\n"
                        + Path(log.name).read_text()[-4000:]
                    )
                await asyncio.sleep(0.1)
            for ns in namespaces:
                await client.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )
            expected = {ident_of(d) for d in docs if d["kind"] in BY_NAME}
            tracker = Tracker(client, expected)
            tasks = tracker.start()
            await asyncio.wait_for(tracker.all_listed.wait(), 30)

            t0 = time.perf_counter()
            await create_all(client, docs, args.create_concurrency)
            created = time.perf_counter() - t0
            try:
                await asyncio.wait_for(tracker.converged.wait(), args.timeout)
                ok = True
            except TimeoutError:
                ok = False
            converge = (tracker.converged_at if ok else time.perf_counter()) - t0
            _, text = await asyncio.to_thread(http_get, probe + "/metrics")
            at_converged = total(samples(text), "controller_runtime_reconcile_total")
            found = await settled_metrics(probe, quiet=2.0, limit=60.0)
            _, server_text = await asyncio.to_thread(http_get, url + "/metrics")
            served = samples(server_text)
            violations = sum(
                1
                for dependent, dependency in pairs
                if dependent in tracker.ready_rv
                and tracker.ready_rv[dependent] < tracker.ready_rv.get(dependency, 1 << 62)
            )
            result = {
                "ok": ok,
                "ready": len(tracker.ready_at),
                "created_s": created,
                "converge_s": converge,
                "reconciles_at_converged": at_converged,
                "reconciles": total(found, "controller_runtime_reconcile_total"),
                "conflicts": total(found, "controller_runtime_reconcile_total", result="requeue"),
                "errors": total(found, "controller_runtime_reconcile_errors_total"),
                "patches": total(served, "apiserver_request_total", verb="PATCH"),
                "events": total(served, "apiserver_request_total", verb="POST", resource="events"),
                "order_violations": violations,
                "by_kind": by_kind(found),
            }
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in tasks:
            task.cancel()
        rss_kib = 0
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                _, rss_kib = await asyncio.wait_for(asyncio.to_thread(wait4, proc), 40)
            except TimeoutError:
                proc.kill()
                _, rss_kib = wait4(proc)
        log.close()
        stop_server(server)
    return Run(name=contender.name, rss_mib=rss_kib / 1024, **result)


# -- main ---------------------------------------------------------------------------------


def median_run(runs: list[Run]) -> dict[str, float]:
    keys = (
        "created_s", "converge_s", "reconciles_at_converged", "reconciles", "conflicts",
        "errors", "patches", "events", "rss_mib", "order_violations",
    )  # fmt: skip
    return {k: statistics.median(float(getattr(r, k)) for r in runs) for k in keys}


def bus_figures(rounds: int, n: int) -> tuple[float, float]:
    """benchmarks/bus.py's in-process measurement: (InProcessBus, asyncio.Queue) events/s,
    one trivial handler, uvloop, best of ``rounds`` alternating rounds."""
    events = bus_bench.make_events(n, 1000)
    bus_rates, queue_rates = [], []
    for _ in range(rounds):
        bus_rates.append(bus_bench.run_in_loop("uvloop", bus_bench.run_bus(events, "trivial")))
        queue_rates.append(bus_bench.run_in_loop("uvloop", bus_bench.run_queue(events, "trivial")))
    return max(bus_rates), max(queue_rates)


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


async def contenders_run(args: argparse.Namespace) -> tuple[list[str], dict[str, list[Run]]]:
    docs = stacks(args.objects_per_kind)
    random.Random(args.seed).shuffle(docs)
    namespaces = sorted({d["metadata"]["namespace"] for d in docs if "namespace" in d["metadata"]})
    pairs = edges(docs)
    contenders = [Contender("kernel", "examples.platform_demo:platform", {})]
    for n in args.requeue_after:
        contenders.append(
            Contender(
                f"hand-written {n:g}s",
                "lifecycle_baseline:manager",
                {"BENCH_REQUEUE_AFTER": str(n)},
                [str(BENCH_DIR)],
            )
        )
    runs: dict[str, list[Run]] = {c.name: [] for c in contenders}
    tmp = Path(tempfile.mkdtemp(prefix="kubewerk-lifecycle-bench-"))
    for r in range(args.repeat):
        order = contenders if r % 2 == 0 else contenders[::-1]
        for contender in order:
            run = await run_contender(contender, docs, namespaces, pairs, args, tmp)
            runs[contender.name].append(run)
            print(
                f"  round {r + 1} {run.name}: {'converged' if run.ok else 'NOT converged'} "
                f"({run.ready}) in {run.converge_s:.2f}s, {run.reconciles:,.0f} reconciles, "
                f"RSS {run.rss_mib:.1f} MiB",
                flush=True,
            )
    print(f"(operator logs in {tmp})")
    return [c.name for c in contenders], runs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects-per-kind", type=int, default=200, help="tenant stacks")
    parser.add_argument(
        "--requeue-after",
        type=lambda s: [float(x) for x in s.split(",") if x],
        default=[1.0, 5.0],
        help="the hand-written operator's requeue interval(s) in seconds, comma-separated",
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds (medians are reported)")
    parser.add_argument("--delay", type=float, default=0.2, help="provider delay (seconds)")
    parser.add_argument("--workers", type=int, default=4, help="concurrent reconciles per kind")
    parser.add_argument("--create-concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=600, help="per contender run")
    parser.add_argument("--bus-events", type=int, default=200_000)
    parser.add_argument("--bus-rounds", type=int, default=3)
    parser.add_argument(
        "--by-kind", action="store_true", help="also print reconciles per kind and result"
    )
    args = parser.parse_args()
    k = args.objects_per_kind
    n_objects = k * len(KINDS)
    print(
        f"lifecycle: {len(KINDS)} kinds x {k} objects = {n_objects:,} objects ({k} tenant stacks, "
        f"+{k} Secrets, {k} namespaces), created at once in shuffled order; provider delay "
        f"{args.delay:g}s, {args.workers} workers per kind; median of {args.repeat} round(s)",
        flush=True,
    )
    names, runs = asyncio.run(contenders_run(args))

    print()
    print(
        f"{'contender':<18}{'converged':>10}{'time':>9}{'reconciles':>12}{'/object':>9}"
        f"{'conflicts':>10}{'patches/obj':>12}{'Events/obj':>11}{'peak RSS':>11}{'order':>7}"
    )
    medians = {name: median_run(runs[name]) for name in names}
    for name in names:
        m = medians[name]
        ok = all(r.ok for r in runs[name])
        print(
            f"{name:<18}{'yes' if ok else 'NO':>10}{m['converge_s']:>8.2f}s"
            f"{m['reconciles']:>12,.0f}{m['reconciles'] / n_objects:>9.2f}{m['conflicts']:>10,.0f}"
            f"{m['patches'] / n_objects:>12.2f}{m['events'] / n_objects:>11.2f}"
            f"{m['rss_mib']:>8.1f}MiB{m['order_violations']:>7.0f}"
        )
    created = statistics.median(r.created_s for name in names for r in runs[name])
    print(
        f"(creating the {n_objects + k:,} objects took {created:.2f}s; reconciles counted when "
        "nothing had reconciled for 2 s after convergence; at convergence: "
        + ", ".join(f"{n} {medians[n]['reconciles_at_converged']:,.0f}" for n in names)
        + ")"
    )
    if args.by_kind:
        print()
        for name in names:
            first = runs[name][0].by_kind
            print(
                f"{name} (round 1), reconciles per object by kind: "
                + ", ".join(
                    f"{kind} {sum(results.values()) / k:.2f}"
                    + (
                        f" ({results.get('requeue', 0) / k:.2f} conflicts)"
                        if results.get("requeue")
                        else ""
                    )
                    for kind, results in sorted(first.items())
                )
            )
    kernel = medians["kernel"]
    per_object = kernel["reconciles"] / n_objects
    print()
    for name in names[1:]:
        b = medians[name]
        print(
            f"{name} / kernel: {b['reconciles'] / kernel['reconciles']:.1f}x the reconciles, "
            f"{b['converge_s'] / kernel['converge_s']:.2f}x the time, "
            f"{b['rss_mib'] / kernel['rss_mib']:.2f}x the peak RSS"
        )

    bus_rate, queue_rate = bus_figures(args.bus_rounds, args.bus_events)
    print(
        f"bus: InProcessBus {bus_rate:,.0f} events/s ({args.bus_events:,} events, one trivial "
        f"handler, uvloop, best of {args.bus_rounds}), {bus_rate / queue_rate:.2f}x a bare "
        f"asyncio.Queue ({queue_rate:,.0f} events/s)"
    )
    print()
    print("targets (issue 12):")
    print(f"  kernel <= 3 reconciles per object: {per_object:.2f}, {met(per_object <= 3)}")
    for name in names[1:]:
        b = medians[name]
        fewer = b["reconciles"] / kernel["reconciles"]
        faster = b["converge_s"] / kernel["converge_s"]
        print(
            f"  vs {name}: >= 5x fewer reconciles: {fewer:.1f}x, {met(fewer >= 5)}; "
            f"faster convergence: {faster:.2f}x, {met(faster > 1)}"
        )
    print(f"  bus >= 50,000 events/s in-process: {bus_rate:,.0f}, {met(bus_rate >= 50_000)}")


if __name__ == "__main__":
    main()
