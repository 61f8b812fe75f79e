"""What a lint rule is, and what it may do.

A rule is one subclass of :class:`Rule`: its identity (``id``, default ``severity``,
one-line ``summary``, a documented bad/good ``example``, and its docstring, which is its
section of docs/lint-rules.md) and up to two kinds of checks:

- :meth:`Rule.check_crd` runs once per CRD and sees the whole :class:`CRDView`;
- a rule with ``nodes`` looks at schema nodes. For each distinct schema of the CRD
  (versions whose schema and subresources are identical share one), its
  :meth:`Rule.start` is called, then during the single walk over that schema its
  :meth:`Rule.visit` for each node ``nodes`` selects, then :meth:`Rule.finish`. One
  instance serves a whole lint run (:class:`~kubewerk.govern.rules.linter.Linter`), so
  state kept per schema is reset in :meth:`Rule.start`.

Adding a rule is one module with one such class, and one line in the registry
(:data:`kubewerk.govern.rules.RULES`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from kubewerk.govern.crd_view import CRDView, Location, SchemaNode, VersionView
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.example import Example

PRESERVE_UNKNOWN_FIELDS = "x-kubernetes-preserve-unknown-fields"
VALIDATIONS = "x-kubernetes-validations"


@dataclass(frozen=True, slots=True)
class RawFinding:
    """A finding before it is tied to a file: rule, message, location in the CRD."""

    rule: str
    message: str
    location: Location
    field: str = ""
    versions: tuple[str, ...] = ()
    severity: Severity | None = None  # None: the rule's (possibly configured) severity
    extra: tuple[tuple[str, str], ...] = ()


Emit = Callable[[RawFinding], None]


class Section(enum.Enum):
    """Which top-level part of a schema a rule looks at."""

    ANY = "any"
    STATUS = "status"  # the ``status`` property and everything under it
    NOT_STATUS = "not-status"  # the root, ``spec`` and any other top-level property


DEEPEST = 1 << 30  # no depth bound


@dataclass(frozen=True, slots=True)
class Nodes:
    """The schema nodes a rule's :meth:`Rule.visit` is called for.

    A node is selected when its ``type`` is one of ``types`` (``None``: any type, or
    none), it lies in ``section``, its depth (0 for the root, 1 for ``spec``) is within
    ``min_depth``..``max_depth`` and, if ``keyword`` is given, its schema has that key.
    The ``metadata``, ``apiVersion`` and ``kind`` subtrees are never visited: the API
    server defines them.
    """

    types: frozenset[str] | None = None
    section: Section = Section.ANY
    min_depth: int = 0
    max_depth: int = DEEPEST
    keyword: str | None = None


class SchemaScope:
    """The schema one rule instance sees: the CRD, the first version that has this
    schema, every version sharing it, and where the schema sits in the document."""

    __slots__ = ("_emit", "base", "crd", "version", "versions")

    def __init__(
        self, crd: CRDView, version: VersionView, versions: tuple[str, ...], emit: Emit
    ) -> None:
        self.crd = crd
        self.version = version
        self.versions = versions
        self.base: Location = version.schema_location
        self._emit = emit

    def emit(
        self,
        rule: str,
        location: Location,
        field: str,
        message: str,
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Report a finding at ``location`` (relative to the schema root)."""
        self._emit(
            RawFinding(rule, message, (*self.base, *location), field, self.versions, extra=extra)
        )


class Rule:
    """One lint rule (see the module docstring). Subclasses set the class attributes
    and override the hooks they need; the docstring is the rule's documentation."""

    id: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    example: ClassVar[Example]
    # severities some of its checks report instead of ``severity`` (version-discipline)
    other_severities: ClassVar[tuple[Severity, ...]] = ()
    # the nodes :meth:`visit` is called for; None: the rule does not walk schemas
    nodes: ClassVar[Nodes | None] = None

    @classmethod
    def severities(cls) -> tuple[Severity, ...]:
        """Every severity the rule reports, most severe first."""
        return tuple(sorted({cls.severity, *cls.other_severities}, reverse=True))

    @classmethod
    def check_crd(cls, crd: CRDView, emit: Emit) -> None:
        """Checks of the CRD as a whole, once per CRD (default: none)."""

    @classmethod
    def applies(cls, crd: CRDView) -> bool:
        """Whether the rule walks this CRD's schemas at all (default: yes)."""
        return True

    @classmethod
    def finding(
        cls,
        message: str,
        location: Location,
        *,
        versions: tuple[str, ...] = (),
        severity: Severity | None = None,
    ) -> RawFinding:
        """A CRD-level finding of this rule at ``location`` (relative to the document)."""
        return RawFinding(cls.id, message, location, versions=versions, severity=severity)

    scope: SchemaScope  # the schema being walked (set by :meth:`start`)

    def start(self, scope: SchemaScope) -> None:
        """Begin a schema: called before its first :meth:`visit`. A rule that keeps
        state per schema resets it here (and calls this)."""
        self.scope = scope

    def visit(self, node: SchemaNode) -> None:
        """Called for each node ``nodes`` selects, in document order (pre-order)."""

    def finish(self) -> None:
        """Called once after the walk (for rules that report what they gathered)."""

    def report(
        self,
        node: SchemaNode,
        message: str,
        *,
        extra: tuple[tuple[str, str], ...] = (),
        suffix: Location = (),
    ) -> None:
        """Report a finding about ``node`` (at its location, plus ``suffix``)."""
        self.scope.emit(self.id, (*node.location(), *suffix), node.field_path(), message, extra)
