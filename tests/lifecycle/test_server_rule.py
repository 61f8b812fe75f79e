"""The generated transition rule enforced by the embedded API server, driven by the real
``kubectl`` (``kubectl patch --subresource=status``): the first write of a phase and
legal moves pass, an illegal move gets 422 with the generated message, and so does
removing the phase."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest
import yaml

from kubewerk.model import crd_yaml

from .models import Database

pytestmark = pytest.mark.e2e

KubectlRun = Callable[..., subprocess.CompletedProcess[str]]
CRD = Database.kind_info().crd_name


def patch_phase(kubectl: KubectlRun, phase: str | None) -> subprocess.CompletedProcess[str]:
    body = json.dumps({"status": {"phase": phase}})
    return kubectl(
        "-v=6",
        "patch",
        f"{CRD}/orders",
        "--subresource=status",
        "--type=merge",
        "-p",
        body,
        check=False,
    )


def answered_422(run: subprocess.CompletedProcess[str]) -> bool:
    """kubectl (-v=6) logged the PATCH's response as 422."""
    return any(
        'verb="PATCH"' in line and 'status="422 Unprocessable Entity"' in line
        for line in run.stderr.splitlines()
    )


def phase_of(kubectl: KubectlRun) -> str | None:
    out = kubectl("get", f"{CRD}/orders", "-o", "json").stdout
    phase: str | None = json.loads(out).get("status", {}).get("phase")
    return phase


def test_kubectl_status_patches_follow_the_lifecycle(kubectl: KubectlRun) -> None:
    kubectl("apply", "-f", "-", input=crd_yaml(Database))
    kubectl("wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=10s")
    manifest = {
        "apiVersion": Database.kind_info().api_version,
        "kind": "Database",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {"engine": "postgres"},
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))

    # the first write of a phase has no old value: the transition rule is skipped
    first = patch_phase(kubectl, "Failed")
    assert first.returncode == 0, first.stderr
    assert phase_of(kubectl) == "Failed"

    illegal = patch_phase(kubectl, "Active")
    assert illegal.returncode == 1
    assert answered_422(illegal)
    assert (
        f'The {Database.kind_info().kind} "orders" is invalid: status.phase: Invalid value: '
        '"string": illegal phase transition Failed → Active '
        "(allowed from Failed: Reconciling, Deleting)"
    ) in illegal.stderr
    assert phase_of(kubectl) == "Failed"

    for phase in ("Reconciling", "Active", "Active"):  # legal moves, and staying
        legal = patch_phase(kubectl, phase)
        assert legal.returncode == 0, legal.stderr
        assert phase_of(kubectl) == phase

    removed = patch_phase(kubectl, None)
    assert removed.returncode == 1 and answered_422(removed)
    assert (
        "status.phase: Required value: status.phase may not be removed once set (it is Active)"
    ) in removed.stderr

    terminal = patch_phase(kubectl, "Deleting")
    assert terminal.returncode == 0, terminal.stderr
    back = patch_phase(kubectl, "Active")
    assert back.returncode == 1 and answered_422(back)
    assert "(allowed from Deleting: none, Deleting is terminal)" in back.stderr

    # a write to the main resource does not touch the status: the rules pass
    kubectl("patch", f"{CRD}/orders", "--type=merge", "-p", '{"spec":{"engine":"mysql"}}')
    assert phase_of(kubectl) == "Deleting"
