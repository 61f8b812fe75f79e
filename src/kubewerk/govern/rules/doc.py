"""docs/lint-rules.md, generated from the rules themselves.

:func:`render` builds the whole page from :data:`~kubewerk.govern.rules.RULES`: the
table (id, severities, summary) and, per rule, its docstring and its bad and good
example, so that the page cannot list a rule, a severity or an example the code does not
have. ``python -m kubewerk.govern.rules.doc > docs/lint-rules.md`` rewrites the page; a
test fails when the file differs from :func:`render`.
"""

from __future__ import annotations

import inspect

from kubewerk.govern.rules import RULES
from kubewerk.govern.rules.base import Rule

_HEADER = """\
<!-- Generated from src/kubewerk/govern/rules/ by
     `python -m kubewerk.govern.rules.doc > docs/lint-rules.md`: edit the rules, not this file. -->

# `kubewerk lint` rules

Every rule has a stable id (used in `--enable`/`--disable`, the config file and the
reports), a default severity (the config can change it) and a bad and a good example.
Each example is a fragment of a CRD and says where it goes; the tests put each one into
a small CRD that passes every rule and check that the rule reports the bad fragment and
not the good one. Field paths in findings use Kubernetes notation: `spec.rules[*].name`
for list items and map values.

Versions whose schema and subresources are identical are linted once; the finding lists
all of them. The rules that look at schema nodes share one walk per distinct schema, and
none of them looks inside `metadata`, `apiVersion` or `kind` (the API server defines
those).
"""


def severity_text(rule: type[Rule]) -> str:
    """The severities a rule reports, as the table shows them (``error / info``)."""
    return " / ".join(s.label for s in rule.severities())


def _section(rule: type[Rule]) -> str:
    example = rule.example
    parts = [
        f"## {rule.id}",
        inspect.cleandoc(rule.__doc__ or ""),
        f"Bad, in {example.where.value}:",
        f"```yaml\n{example.bad.rstrip()}\n```",
        "Good:",
        f"```yaml\n{example.good.rstrip()}\n```",
    ]
    if example.note:
        parts.append(example.note)
    return "\n\n".join(parts) + "\n"


def render() -> str:
    """The text of docs/lint-rules.md."""
    rows = [
        "| rule id | severity | finds |",
        "|---|---|---|",
        *(f"| [`{r.id}`](#{r.id}) | {severity_text(r)} | {r.summary} |" for r in RULES.values()),
    ]
    return "\n".join([_HEADER, *rows, ""]) + "\n" + "\n".join(_section(r) for r in RULES.values())


if __name__ == "__main__":
    print(render(), end="")
