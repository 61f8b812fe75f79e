"""examples/platform_demo/README.md, run: every command of its walk-through, in order, through
``bash`` from the repository's root, against ``kubewerk up`` (a process) with the real
kubectl and the operator as a process — checked against what the README says it prints.

The commands run as written, except: ``kubewerk up`` gets ``--port 0`` and runs in a
temporary directory (its kubeconfig lands in ``.kubewerk/`` there, which ``export
KUBECONFIG=...`` then names); the operator's probes take a free port (``--probe-address
127.0.0.1:0``) that ``curl`` is pointed at, and its ``KUBEWERK_PLATFORM_DELAY`` is 0.3
instead of 1; watches (``-w``) are stopped once they showed what the README says.
``test_the_readme_is_what_this_test_runs`` keeps the README's commands and this list the
same.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import LineReader

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
README = REPO / "examples" / "platform_demo" / "README.md"
BIN = str(Path(sys.executable).parent)

UP = "kubewerk up"
EXPORT = "export KUBECONFIG=$PWD/.kubewerk/kubeconfig"
RUN = "KUBEWERK_PLATFORM_DELAY=1 kubewerk run examples.platform_demo:platform"
WAITS = (
    "custom-columns='NAME:.metadata.name,PHASE:.status.phase,WAITING FOR:"
    '.status.conditions[?(@.type=="DependenciesReady")].message\''
)
DB_WAITS = (
    "custom-columns='NAME:.metadata.name,PHASE:.status.phase,DEPENDENCIES:"
    '.status.conditions[?(@.type=="DependenciesReady")].message\''
)
CYCLE = "Database/acme/orders -> Database/acme/orders-replica -> Database/acme/orders"
REPLICA_CYCLE = (
    "Database/acme/orders-replica -> Database/acme/orders -> Database/acme/orders-replica"
)

Check = Callable[[subprocess.CompletedProcess[str]], bool]


@dataclass(frozen=True)
class Step:
    """One README command and what must come of it. ``settles``: run it again (for up to
    20 s) until the check passes — the README shows the state the platform settles in."""

    command: str
    check: Check
    settles: bool = False
    watch: Callable[[str], bool] | None = None
    """For a ``-w`` command: the line to wait for before stopping it."""


def ok(*texts: str) -> Check:
    """Exit code 0 and every text in stdout."""
    return lambda p: p.returncode == 0 and all(t in p.stdout for t in texts)


def fails_with(text: str) -> Check:
    return lambda p: p.returncode != 0 and p.stderr.strip() == text


def lines(p: subprocess.CompletedProcess[str]) -> list[str]:
    return [re.sub(r"\s+", " ", line).strip() for line in p.stdout.strip().splitlines()]


def ordered(*texts: str) -> Check:
    """Every text in stdout, in this order."""

    def check(p: subprocess.CompletedProcess[str]) -> bool:
        at = [p.stdout.find(t) for t in texts]
        return p.returncode == 0 and -1 not in at and at == sorted(at)

    return check


def all_kinds_ready(p: subprocess.CompletedProcess[str]) -> bool:
    rows = [line for line in lines(p) if "platform.kubewerk.dev/" in line]
    return len(rows) == 18 and all(" Active " in r or " Succeeded " in r for r in rows)


def deprovisioned_leaves_first(p: subprocess.CompletedProcess[str]) -> bool:
    objects = [
        next(t for t in row.split() if re.fullmatch(r"[a-z]+/[a-z0-9-]+", t))
        for row in lines(p)[1:]
    ]
    if p.returncode != 0 or len(set(objects)) != 18 or objects[-1] != "tenant/acme":
        return False
    last = {name: i for i, name in enumerate(objects)}
    first = {name: objects.index(name) for name in objects}
    leaves_before = [
        ("alert/shop-errors", "application/shop"),
        ("schedule/daily-report", "job/report"),
        ("job/report", "application/shop"),
        ("application/shop", "route/shop"),
        ("route/shop", "certificate/shop-tls"),
        ("certificate/shop-tls", "dnsrecord/shop"),
        ("dnsrecord/shop", "environment/prod"),
        ("backup/orders-nightly", "bucket/backups"),
        ("bucket/backups", "credentialbinding/shop-credentials"),
        ("quota/shop", "project/shop"),
    ]
    return all(last[a] < first[b] for a, b in leaves_before)


STEPS = [
    Step(UP, ok()),
    Step(EXPORT, ok()),
    Step(
        "kubectl apply -f examples/platform_demo/crds/", lambda p: p.stdout.count(" created") == 17
    ),
    Step(
        "kubectl wait --for=condition=Established -f examples/platform_demo/crds/",
        lambda p: p.stdout.count("condition met") == 17,
    ),
    Step(RUN, ok()),
    Step("kubectl create namespace acme", ok("namespace/acme created")),
    Step(
        "kubectl apply -n acme -f examples/platform_demo/stack/",
        lambda p: (
            p.stdout.count(" created") == 19
            and p.stdout.startswith("alert.platform.kubewerk.dev/shop-errors created\n")
            and p.stdout.endswith("tenant.platform.kubewerk.dev/acme created\n")
        ),
    ),
    Step(
        f"kubectl get applications -n acme -w -o {WAITS}",
        ok("NAME PHASE WAITING FOR\n", "shop Pending waiting for "),
        watch=lambda line: line.split()[:2] == ["shop", "Active"],
    ),
    Step(
        "kubectl get events.events.k8s.io -n acme --field-selector reason=PhaseChanged"
        " --sort-by=.eventTime",
        ordered(
            "environment/prod",
            "database/orders ",
            "application/shop",
            "Pending → Running: Started",
            "Running → Succeeded: Completed",
            "schedule/daily-report",
        ),
        settles=True,
    ),
    Step("kubectl get platform -n acme", all_kinds_ready),
    Step(
        "kubectl get application shop -n acme -o jsonpath='{.status.endpoint}{\"\\n\"}'",
        lambda p: p.stdout == "https://shop.acme.example.com/\n",
    ),
    Step(
        "kubewerk graph --cluster -n acme",
        lambda p: (
            p.returncode == 0
            and p.stdout.startswith("Alert/acme/shop-errors [Active]\n")
            and "│  │     └─ spec.tenantRef → Tenant/acme [Active]" in p.stdout
            and p.stdout.endswith("19 objects, 32 references, 0 cycles, 0 unresolved references\n")
        ),
    ),
    Step(
        "kubewerk graph examples/platform_demo/crds examples/platform_demo/stack -n acme"
        " --format mermaid",
        ok("Application/acme/shop"),
    ),
    Step(
        "kubectl patch cache sessions -n acme --type=merge"
        ' -p \'{"spec":{"simulate":{"fail":true}}}\'',
        ok("cache.platform.kubewerk.dev/sessions patched"),
    ),
    Step(
        "kubectl get cache sessions -n acme",
        lambda p: lines(p)[0] == "NAME PHASE AGE" and lines(p)[1].startswith("sessions Failed "),
        settles=True,
    ),
    Step(
        f"kubectl get applications -n acme -o {WAITS}",
        lambda p: (
            lines(p)
            == [
                "NAME PHASE WAITING FOR",
                "shop Active waiting for Cache/acme/sessions (in phase Failed)",
            ]
        ),
        settles=True,
    ),
    Step(
        "kubectl patch cache sessions -n acme --type=merge"
        ' -p \'{"spec":{"simulate":{"fail":false}}}\'',
        ok("patched"),
    ),
    Step(
        "kubectl get events.events.k8s.io -n acme --field-selector regarding.name=sessions"
        " --sort-by=.eventTime",
        ordered(
            "Pending → Active: Provisioned",
            "Active → Reconciling: SpecChanged",
            "Reconciling → Failed: ReconcileFailed (provisioning Cache sessions failed: the "
            "provider refused it (spec.simulate.fail is true))",
            "Failed → Reconciling: SpecChanged",
            "Reconciling → Active: Provisioned",
        ),
        settles=True,
    ),
    Step(
        "kubectl patch cache sessions -n acme --subresource=status --type=merge"
        ' -p \'{"status":{"phase":"Pending"}}\'',
        fails_with(
            'The Cache "sessions" is invalid: status.phase: Invalid value: "string": illegal '
            "phase transition Active → Pending (allowed from Active: Reconciling, Deleting, "
            "Failed)"
        ),
        settles=True,  # the recovery above may still be on its way to Active
    ),
    Step(
        "kubectl patch jobs.platform.kubewerk.dev report -n acme --subresource=status --type=merge"
        ' -p \'{"status":{"phase":"Pending"}}\'',
        fails_with(
            'The Job "report" is invalid: status.phase: Invalid value: "string": illegal phase '
            "transition Succeeded → Pending (allowed from Succeeded: Running, Deleting)"
        ),
    ),
    Step(
        "kubectl patch database orders -n acme --type=merge"
        ' -p \'{"spec":{"replicaOf":{"name":"orders-replica"}}}\'',
        ok("patched"),
    ),
    Step(
        f"kubectl get databases -n acme -o {DB_WAITS}",
        lambda p: (
            lines(p)
            == [
                "NAME PHASE DEPENDENCIES",
                f"orders Active dependency cycle: {CYCLE}",
                f"orders-replica Active dependency cycle: {REPLICA_CYCLE}",
            ]
        ),
        settles=True,
    ),
    Step(
        "kubectl get events.events.k8s.io -n acme --field-selector reason=DependencyCycle",
        lambda p: sum(" Warning DependencyCycle database/" in r for r in lines(p)) == 2,
        settles=True,
    ),
    Step(
        "kubewerk graph --cluster -n acme",
        lambda p: p.returncode == 1 and f"cycles:\n  {CYCLE}\n" in p.stdout,
    ),
    Step(
        "kubectl patch database orders -n acme --type=json"
        ' -p \'[{"op":"remove","path":"/spec/replicaOf"}]\'',
        ok("patched"),
    ),
    Step(
        "kubectl get events.events.k8s.io -n acme --field-selector reason=DependencyCycleResolved",
        lambda p: sum("DependencyCycleResolved" in r for r in lines(p)) == 2,
        settles=True,
    ),
    Step(
        "curl -s localhost:8081/metrics | grep -E '^kubewerk_(phase_transitions_total|objects)'",
        ok(
            'kubewerk_phase_transitions_total{from="Pending",kind="Tenant.platform.kubewerk.dev"'
            ',to="Active"} 1.0',
            'kubewerk_objects{kind="Job.platform.kubewerk.dev",phase="Succeeded"} 1.0',
        ),
    ),
    Step("kubectl delete tenant acme", ok('tenant.platform.kubewerk.dev "acme" deleted')),
    Step(
        "kubectl get events.events.k8s.io -A --field-selector reason=Deprovisioned"
        " --sort-by=.eventTime",
        deprovisioned_leaves_first,
        settles=True,
    ),
    Step(
        "kubectl get platform -n acme",
        lambda p: p.returncode == 0 and p.stdout == "" and "No resources found" in p.stderr,
    ),
    Step("kubectl get secret shop-credentials -n acme", ok("shop-credentials")),
]


def readme_commands() -> list[str]:
    """The ``$ `` lines of the README's console blocks, in order."""
    out: list[str] = []
    inside = False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```console"
            continue
        if inside and line.startswith("$ "):
            out.append(line[2:])
    return out


def test_the_readme_is_what_this_test_runs() -> None:
    assert readme_commands() == [step.command for step in STEPS]


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """Where ``kubewerk up`` runs (its ``.kubewerk/`` goes there)."""
    yield tmp_path


class Session:
    """A shell-like session: environment variables, and the processes it started."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.env.pop("KUBECONFIG", None)
        self.env["HOME"] = str(workdir)  # kubectl's discovery cache stays private to the test
        self.processes: list[tuple[str, subprocess.Popen[str], Path]] = []
        self.probe = ""
        self.stopped = False

    def background(self, name: str, argv: list[str], cwd: Path) -> Path:
        log = self.workdir / f"{name}.log"
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.processes.append((name, proc, log))
        return log

    def wait_for_log(self, log: Path, pattern: str, timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, log.read_text(errors="replace"))
            if found:
                return found
            time.sleep(0.05)
        pytest.fail(f"{log.name}: no {pattern!r} within {timeout}s:\n{log.read_text()}")

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=REPO, env=self.env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip

    def stop(self) -> None:
        """SIGTERM every process (the operator first), print their logs (once)."""
        if self.stopped:
            return
        self.stopped = True
        for name, proc, log in reversed(self.processes):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            print(f"--- {name} (exit {proc.returncode}) ---\n{log.read_text()[-10000:]}")


def test_the_readme_walk_through_works(workdir: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    session = Session(workdir)
    try:
        for step in STEPS:
            run_step(session, step)
        assert [p.returncode for _, p, _ in session.processes if p.poll() is not None] == []
        session.stop()
        codes = {name: p.returncode for name, p, _ in session.processes}
        assert codes == {"up": 0, "run": 0}, codes
    finally:
        session.stop()


def run_step(session: Session, step: Step) -> None:
    command = step.command
    if command == UP:
        log = session.background("up", ["kubewerk", "up", "--port", "0"], session.workdir)
        session.wait_for_log(log, r"listening on http://\S+")
        return
    if command == EXPORT:
        session.env["KUBECONFIG"] = str(session.workdir / ".kubewerk" / "kubeconfig")
        return
    if command == RUN:
        session.env["KUBEWERK_PLATFORM_DELAY"] = "0.3"
        log = session.background(
            "run",
            [
                "kubewerk",
                "run",
                "examples.platform_demo:platform",
                "--probe-address",
                "127.0.0.1:0",
            ],
            REPO,
        )
        found = session.wait_for_log(log, r"probes and metrics on http://(\S+) ")
        session.probe = found.group(1)
        return
    command = command.replace("localhost:8081", session.probe)
    if step.watch is not None:
        watched = watch(session, command, step.watch)
        assert step.check(watched), f"{command}:\n{watched.stdout}\n{watched.stderr}"
        return
    deadline = time.monotonic() + (20 if step.settles else 0)
    while True:
        done = session.shell(command)
        if step.check(done):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{command} (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
        time.sleep(0.2)


def watch(
    session: Session, command: str, until: Callable[[str], bool]
) -> subprocess.CompletedProcess[str]:
    """Run a ``-w`` command until a line satisfies ``until``; what it printed so far."""
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=REPO, env=session.env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    reader = LineReader(proc)
    try:
        reader.wait_for(until, timeout=30)
    finally:
        stderr = reader.stop()
    text = "\n".join(re.sub(r"\s+", " ", line) for line in reader.seen) + "\n"
    return subprocess.CompletedProcess(command, 0, text, stderr)
