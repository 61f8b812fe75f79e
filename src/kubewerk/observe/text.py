"""The kubectl plugin's screens as plain text: :func:`health_table` (the dashboard's
summary) and :func:`why_screen` (why one object is not Ready).

Tables are laid out like kubectl's (upper-case headers, columns three spaces apart).
Cluster data is printed with control characters replaced by ``?``, so a hostile name
or message cannot move the cursor or recolour the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["health_table", "safe", "table", "why_screen"]

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: Any) -> str:
    """``text`` as a string with terminal control characters (and newlines) replaced."""
    return _CONTROL.sub("?", str(text)).replace("\n", " ")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A kubectl-style table (no trailing spaces)."""
    cells = [[safe(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *cells]:
        line = "   ".join(c.ljust(widths[i]) for i, c in enumerate(row))
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def _obj(entry: dict[str, Any]) -> str:
    ns = f"{entry['namespace']}/" if entry.get("namespace") else ""
    return f"{entry['kind']}/{ns}{entry['name']}"


def health_table(doc: dict[str, Any]) -> str:
    """The summary (:func:`kubewerk.observe.views.summary`) as two tables: kinds, then
    the stuck objects with their first reason."""
    rows = []
    for k in doc["kinds"]:
        phases = ",".join(f"{p}={n}" for p, n in k["phases"].items()) or "-"
        ready = k["ready"]
        rows.append(
            [
                k["label"],
                k["total"],
                ready["True"],
                ready["False"],
                ready["Unknown"] + ready["None"],
                k["stuck"],
                phases if not k["error"] else f"error: {k['error']}",
            ]
        )
    out = [table(["KIND", "TOTAL", "READY", "NOT-READY", "UNKNOWN", "STUCK", "PHASES"], rows)]
    if doc["stuck"]:
        out.append("\n")
        stuck_rows = []
        for s in doc["stuck"]:
            first = s["reasons"][0]
            stuck_rows.append([_obj(s), s.get("phase") or "-", first["reason"], first["message"]])
        out.append(table(["STUCK", "PHASE", "REASON", "MESSAGE"], stuck_rows))
        if doc["stuckTotal"] > len(doc["stuck"]):
            out.append(f"... and {doc['stuckTotal'] - len(doc['stuck'])} more stuck objects\n")
    else:
        out.append("\nnothing is stuck\n")
    return "".join(out)


def why_screen(view: dict[str, Any], deps: dict[str, dict[str, Any]]) -> str:
    """One object's story (:func:`kubewerk.observe.views.object_view`): phase and
    Ready, why it is stuck, its conditions, its dependencies (with each one's own first
    stuck reason from ``deps``, keyed by id), its dependents, its last errors and Events."""
    lines: list[str] = []
    obj = view["object"]
    if obj is None:
        return f"{safe(_obj(view))}: not found\n"
    phase, ready = safe(view["phase"] or "-"), safe(view["ready"] or "-")
    lines.append(f"{safe(_obj(view))}: phase {phase}, Ready {ready}")
    if view["stuck"]:
        for s in view["stuck"]:
            lines.append(f"  stuck: {safe(s['reason'])}: {safe(s['message'])}")
    elif view["ready"] == "True":
        lines.append("  it is Ready")
    if view["cycle"]:
        lines.append(f"  on a dependency cycle: {safe(' -> '.join(view['cycle']))}")
    out = ["\n".join(lines) + "\n"]
    out.append("\nConditions:\n")
    if view["conditions"]:
        out.append(
            table(
                ["TYPE", "STATUS", "REASON", "MESSAGE"],
                [
                    [
                        c.get("type", ""),
                        c.get("status", ""),
                        c.get("reason", ""),
                        c.get("message", ""),
                    ]
                    for c in view["conditions"]
                ],
            )
        )
    else:
        out.append("  none\n")
    out.append("\nDependencies:\n")
    if view["dependencies"]:
        rows = []
        for d in view["dependencies"]:
            if d["present"] is False:
                state = "MISSING"
            elif d["present"] is None:
                state = "not watched"
            else:
                state = f"{d['phase'] or '-'}, Ready {d['ready'] or '-'}"
            detail = deps.get(d["id"], {}).get("stuck") or []
            rows.append(
                [
                    d["path"],
                    _obj(d),
                    state,
                    f"{detail[0]['reason']}: {detail[0]['message']}" if detail else "",
                ]
            )
        out.append(table(["FIELD", "OBJECT", "STATE", "ITS PROBLEM"], rows))
    else:
        out.append("  none\n")
    if view["dependents"]:
        out.append("\nDependents:\n")
        out.append(
            table(
                ["OBJECT", "FIELD", "PHASE"],
                [[_obj(d), d["path"], d["phase"] or "-"] for d in view["dependents"]],
            )
        )
    errors = [e for e in view["events"] if e["type"] == "Warning"]
    out.append("\nLast errors:\n")
    if errors:
        out.append(
            table(
                ["TIME", "REASON", "MESSAGE"],
                [[e["time"], e["reason"], e["message"]] for e in errors[:5]],
            )
        )
    else:
        out.append("  none\n")
    out.append("\nEvents:\n")
    if view["events"]:
        out.append(
            table(
                ["TIME", "TYPE", "REASON", "MESSAGE"],
                [[e["time"], e["type"], e["reason"], e["message"]] for e in view["events"][:10]],
            )
        )
    else:
        out.append("  none\n")
    return "".join(out)
