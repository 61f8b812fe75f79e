"""docs/lint-rules.md's examples, read from the page as a reader reads them: each bad
fragment, put where the page says into the small clean CRD the page describes and saved
as a file, makes ``kubewerk lint`` report its rule, and each
good one does not. tests/govern/test_rule_registry.py checks the page is generated from
the rules; this checks what the page itself shows, through the command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kubewerk.cli import main
from kubewerk.govern.rules.example import Where, example_crd

from .pages import fenced, page

DOC = page("lint-rules")
PLACES = {where.value: where for where in Where}


def _examples() -> list[tuple[str, Where, str, str]]:
    """(rule id, where, bad fragment, good fragment) for each ``## rule`` section."""
    found = []
    for chunk in re.split(r"^## ", DOC, flags=re.M)[1:]:
        rule = chunk.split("\n", 1)[0].strip()
        place = re.search(r"^Bad, in (.*):$", chunk, re.M)
        assert place is not None, rule
        bad, good = [b.text for b in fenced(chunk)][:2]
        assert "\nGood:\n" in chunk[chunk.index(bad) :], rule
        found.append((rule, PLACES[place.group(1)], bad, good))
    return found


EXAMPLES = _examples()


def test_every_rule_in_the_table_has_an_example() -> None:
    table = set(re.findall(r"^\| \[`([a-z-]+)`\]", DOC, re.M))
    assert table == {rule for rule, *_ in EXAMPLES}


@pytest.mark.parametrize(
    ("rule", "where", "bad", "good"), EXAMPLES, ids=[rule for rule, *_ in EXAMPLES]
)
def test_lint_reports_the_bad_example_and_not_the_good_one(
    rule: str,
    where: Where,
    bad: str,
    good: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reported: dict[str, set[str]] = {}
    for name, fragment in (("bad", bad), ("good", good)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(example_crd(where, fragment)))
        capsys.readouterr()
        code = main(["lint", str(path), "--format", "json", "--fail-on", "never"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        reported[name] = {f["rule"] for f in report["findings"]}
    assert rule in reported["bad"]
    assert rule not in reported["good"]
    assert "structural-schema" not in reported["good"]
