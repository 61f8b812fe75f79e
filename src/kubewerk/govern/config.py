"""The governance config file: severities, disabled rules, suppressed findings.

::

    failOn: warning                 # default for --fail-on
    rules:                          # per-rule severity, or off
      no-floats: info
      list-type-missing: off
    disable: [logic-in-spec]        # same as "<rule>: off"
    suppress:                       # single findings, each with a reason
      - rule: plaintext-credential
        crd: widgets.example.com
        path: spec.auth.token       # field path; * and ? glob; or a /JSON/pointer
        version: v1                 # optional
        reason: a public, rate-limited demo token

A mistake in the file (unknown rule, bad severity, a suppression without a reason or
without crd and path) is an :class:`~kubewerk.govern.loader.InputError` naming the line.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubewerk.core.inputs import InputTooLarge, read_file_bounded
from kubewerk.govern.findings import FAIL_LEVELS, Finding, Severity, Suppression
from kubewerk.govern.loader import InputError


@dataclass(frozen=True, slots=True)
class SuppressRule:
    """One ``suppress`` entry."""

    rule: str
    crd: str
    path: str
    reason: str
    source: str
    version: str | None = None

    def matches(self, f: Finding) -> bool:
        if f.rule != self.rule or not fnmatch.fnmatchcase(f.crd, self.crd):
            return False
        if self.version is not None and self.version not in f.versions:
            return False
        if self.path.startswith("/"):
            return fnmatch.fnmatchcase(f.pointer, self.path)
        return fnmatch.fnmatchcase(f.field, self.path)


@dataclass(slots=True)
class Config:
    """Severity overrides, disabled rules and suppressions (empty: all defaults)."""

    severities: dict[str, Severity] = field(default_factory=dict)
    disabled: set[str] = field(default_factory=set)
    suppressions: list[SuppressRule] = field(default_factory=list)
    fail_on: str | None = None
    source: str = ""

    def apply(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[SuppressRule]]:
        """Re-grade and suppress findings; returns them and the suppressions never used."""
        used: set[int] = set()
        out: list[Finding] = []
        for f in findings:
            sev = self.severities.get(f.rule)
            if sev is not None and sev != f.severity:
                f = f.with_severity(sev)
            for i, s in enumerate(self.suppressions):
                if s.matches(f):
                    used.add(i)
                    f = replace(f, suppressed=Suppression(s.reason, s.source))
                    break
            out.append(f)
        unused = [s for i, s in enumerate(self.suppressions) if i not in used]
        return out, unused

    def enabled(
        self, all_rules: Iterable[str], enable: Sequence[str], disable: Sequence[str]
    ) -> frozenset[str]:
        """Rules to run: all, minus the config's disabled ones, plus ``--enable``, minus
        ``--disable`` (the command line wins over the file)."""
        rules = set(all_rules) - self.disabled
        rules |= set(enable)
        rules -= set(disable)
        return frozenset(rules)


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _string(node: Node, name: str, what: str) -> str:
    """The text of a scalar node; any other node, or null, is an error about ``what``."""
    if not isinstance(node, ScalarNode) or node.tag == "tag:yaml.org,2002:null":
        raise InputError(name, _line(node), f"{what} must be a string")
    return str(node.value)


def load_config(path: str, known_rules: Iterable[str]) -> Config:
    """Read and check a config file against the rule ids of the command."""
    known = set(known_rules)
    try:
        text = read_file_bounded(path).decode("utf-8")
    except OSError as exc:
        raise InputError(path, None, f"cannot read config: {exc.strerror or exc}") from None
    except InputTooLarge as exc:
        raise InputError(path, None, str(exc)) from None
    except UnicodeDecodeError:
        raise InputError(path, None, "config is not UTF-8 text") from None
    try:
        # libyaml where built in: it refuses deep nesting at once (PyYAML recursed)
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        raise InputError(path, None, "invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            path, mark.line + 1 if mark else None, f"invalid YAML: {getattr(exc, 'problem', exc)}"
        ) from None
    cfg = Config(source=path)
    if root is None:
        return cfg
    if not isinstance(root, MappingNode):
        raise InputError(path, _line(root), "config must be a mapping")

    def check_rule(node: Node) -> str:
        rule = _string(node, path, "a rule id")
        if rule not in known:
            raise InputError(
                path, _line(node), f"unknown rule {rule!r} (known: {', '.join(sorted(known))})"
            )
        return rule

    for key_node, value in root.value:
        key = _string(key_node, path, "a key")
        if key == "failOn":
            level = _string(value, path, "failOn")
            if level not in FAIL_LEVELS:
                raise InputError(
                    path, _line(value), f"failOn must be one of {', '.join(FAIL_LEVELS)}"
                )
            cfg.fail_on = level
        elif key == "rules":
            if not isinstance(value, MappingNode):
                raise InputError(path, _line(value), "rules must map rule ids to a severity or off")
            for rk, rv in value.value:
                rule = check_rule(rk)
                if isinstance(rv, ScalarNode) and rv.value.lower() in ("off", "false", "disabled"):
                    cfg.disabled.add(rule)
                    continue
                level = _string(rv, path, f"the severity of {rule}")
                try:
                    cfg.severities[rule] = Severity.parse(level)
                except ValueError as exc:
                    raise InputError(path, _line(rv), f"{exc} (or off)") from None
        elif key == "disable":
            if not isinstance(value, SequenceNode):
                raise InputError(path, _line(value), "disable must be a list of rule ids")
            cfg.disabled.update(check_rule(n) for n in value.value)
        elif key == "suppress":
            if not isinstance(value, SequenceNode):
                raise InputError(path, _line(value), "suppress must be a list")
            for entry in value.value:
                cfg.suppressions.append(_suppression(entry, path, check_rule))
        else:
            raise InputError(
                path,
                _line(key_node),
                f"unknown key {key!r} (expected failOn, rules, disable, suppress)",
            )
    return cfg


def _suppression(entry: Node, path: str, check_rule: Callable[[Node], str]) -> SuppressRule:
    if not isinstance(entry, MappingNode):
        raise InputError(path, _line(entry), "a suppression must be a mapping")
    fields: dict[str, str] = {}
    nodes: dict[str, Node] = {}
    for k, v in entry.value:
        key = _string(k, path, "a key")
        if key not in ("rule", "crd", "path", "version", "reason"):
            raise InputError(
                path,
                _line(k),
                f"unknown suppression key {key!r} (rule, crd, path, version, reason)",
            )
        nodes[key] = v
        fields[key] = _string(v, path, key)
    line = _line(entry)
    for needed in ("rule", "crd", "path", "reason"):
        if not fields.get(needed, "").strip():
            raise InputError(path, line, f"a suppression needs {needed!r}")
    rule = check_rule(nodes["rule"])
    return SuppressRule(
        rule=rule,
        crd=fields["crd"],
        path=fields["path"],
        reason=fields["reason"].strip(),
        source=f"{path}:{line}",
        version=fields.get("version"),
    )
