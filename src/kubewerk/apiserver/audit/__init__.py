"""The audit log: kube-apiserver's ``audit.k8s.io/v1`` events for every request.

``policy`` reads and evaluates an audit ``Policy``; ``writer`` appends events as JSON
lines from a thread (bounded, never blocking the event loop); ``auditor`` builds the
events per request and stage (``Auditor.wrap(app)`` audits an ASGI app), with the spec
patch of each write to a custom resource; ``history`` reads an object's writes back and
replays its spec to any past version. ``open_auditor`` puts them together from kube's
flags (``--audit-log-path``, ``--audit-policy-file``).
"""

from __future__ import annotations

from pathlib import Path

from kubewerk.apiserver.audit.auditor import AuditMiddleware, Auditor, AuditRecord
from kubewerk.apiserver.audit.policy import AuditPolicyError, Policy, load_policy, parse_policy
from kubewerk.apiserver.audit.writer import DEFAULT_MAX_BACKLOG, LogWriter

__all__ = [
    "AuditMiddleware",
    "AuditPolicyError",
    "AuditRecord",
    "Auditor",
    "LogWriter",
    "Policy",
    "load_policy",
    "open_auditor",
    "parse_policy",
]


def open_auditor(
    log_path: str | Path,
    policy_file: str | Path | Policy,
    *,
    max_backlog: int = DEFAULT_MAX_BACKLOG,
) -> Auditor:
    """An ``Auditor`` writing to ``log_path`` with the policy in ``policy_file`` (read and
    validated first: ``AuditPolicyError`` says what is wrong before the log is opened).

    As kube-apiserver, no policy means no audit log: pass a ``Policy`` (e.g.
    ``policy.everything()``) to log without a file.
    """
    policy = policy_file if isinstance(policy_file, Policy) else load_policy(policy_file)
    return Auditor(policy, LogWriter(log_path, max_backlog=max_backlog))
