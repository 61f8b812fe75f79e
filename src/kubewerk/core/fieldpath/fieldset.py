"""Sets of field paths (structured-merge-diff's ``fieldpath.Set``) and their ``fieldsV1``
encoding.

A ``FieldSet`` is a tree: ``members`` are the elements that are themselves in the set,
``children`` the sets below elements some longer path goes through. An element may be
both (``.`` in ``fieldsV1``). Sets are values: every operation returns a new set and
never changes its operands, except ``insert``, which builds one in place. A result may
share unchanged subtrees with its operands (nothing is copied that need not be), so
``insert`` only into a set you built yourself and have not yet combined with another.

``to_fields_v1`` writes exactly the JSON object Kubernetes stores in
``managedFields[].fieldsV1``: keys sorted as structured-merge-diff sorts path elements,
``"."`` first where an element is both a member and has children, ``{}`` for leaves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubewerk.core.fieldpath.path import (
    BadPathElement,
    Path,
    PathElement,
    decode_element,
    encode_element,
)

__all__ = ["BadFieldsV1", "FieldSet"]


class BadFieldsV1(ValueError):
    """A ``fieldsV1`` value that does not decode into a set."""


class FieldSet:
    """A set of field paths (see the module docstring)."""

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, FieldSet] = {}

    # -- building ---------------------------------------------------------------------

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        out = cls()
        for p in paths:
            out.insert(p)
        return out

    def insert(self, path: Path) -> None:
        """Add ``path`` (in place)."""
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        if path:
            node.members.add(path[-1])

    def child(self, pe: PathElement) -> FieldSet:
        """The set below ``pe`` (shared, not a copy: do not change it), empty if none."""
        return self.children.get(pe) or _EMPTY

    def child_for_write(self, pe: PathElement) -> FieldSet:
        """The set below ``pe``, created if absent (in place)."""
        child = self.children.get(pe)
        if child is None:
            child = self.children[pe] = FieldSet()
        return child

    # -- questions --------------------------------------------------------------------

    def empty(self) -> bool:
        if self.members:
            return False
        return all(c.empty() for c in self.children.values())

    def has(self, path: Path) -> bool:
        node = self
        for pe in path[:-1]:
            nxt = node.children.get(pe)
            if nxt is None:
                return False
            node = nxt
        return bool(path) and path[-1] in node.members

    def has_prefix(self, pe: PathElement) -> bool:
        """Whether some path in the set goes below ``pe``."""
        child = self.children.get(pe)
        return child is not None and not child.empty()

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every path in the set, in sorted (serialization) order."""
        for pe in sorted(self.members | self.children.keys()):
            if pe in self.members:
                yield (*prefix, pe)
            child = self.children.get(pe)
            if child is not None:
                yield from child.paths((*prefix, pe))

    def __len__(self) -> int:
        return len(self.members) + sum(len(c) for c in self.children.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        if self.members != other.members:
            return False
        mine = {pe: c for pe, c in self.children.items() if not c.empty()}
        theirs = {pe: c for pe, c in other.children.items() if not c.empty()}
        return mine.keys() == theirs.keys() and all(mine[k] == theirs[k] for k in mine)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        from kubewerk.core.fieldpath.path import path_string

        return "FieldSet(" + ", ".join(path_string(p) for p in self.paths()) + ")"

    # -- algebra ----------------------------------------------------------------------

    def copy(self) -> FieldSet:
        out = FieldSet()
        out.members = set(self.members)
        out.children = {pe: c.copy() for pe, c in self.children.items()}
        return out

    def union(self, other: FieldSet) -> FieldSet:
        """Paths in either set. Shares subtrees with both; ``self`` itself when ``other``
        adds nothing to it (so an encoding made of ``self`` still holds)."""
        if other is self or other.empty():
            return self
        if self.empty():
            return other
        members = self.members
        if not other.members <= members:
            members = members | other.members
        mine = self.children
        kids: dict[PathElement, FieldSet] | None = None
        for pe, b in other.children.items():
            a = mine.get(pe)
            if a is None:
                if b.empty():
                    continue
                merged = b
            else:
                merged = a.union(b)
                if merged is a:
                    continue
            if kids is None:
                kids = dict(mine)
            kids[pe] = merged
        if kids is None and members is self.members:
            return self
        out = FieldSet()
        out.members = members if members is not self.members else set(members)
        out.children = kids if kids is not None else dict(mine)
        return out

    def intersection(self, other: FieldSet) -> FieldSet:
        out = FieldSet()
        out.members = self.members & other.members
        if self.children and other.children:
            theirs = other.children
            for pe, a in self.children.items():
                b = theirs.get(pe)
                if b is not None:
                    sub = a.intersection(b)
                    if not sub.empty():
                        out.children[pe] = sub
        return out

    def difference(self, other: FieldSet) -> FieldSet:
        """Paths of ``self`` not in ``other`` (a path stays even if ``other`` holds one of
        its prefixes: structured-merge-diff's ``Difference``)."""
        if not other.members and not other.children:
            return self
        out = FieldSet()
        out.members = self.members - other.members if other.members else set(self.members)
        theirs = other.children
        same = len(out.members) == len(self.members)
        for pe, a in self.children.items():
            b = theirs.get(pe)
            sub = a if b is None else a.difference(b)
            if sub is not a:
                same = False
            if not sub.empty():
                out.children[pe] = sub
        return self if same else out

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Paths of ``self`` that are neither in ``other`` nor below one of its paths."""
        if not other.members and not other.children:
            return self
        out = FieldSet()
        gone = other.members
        out.members = self.members - gone if gone else set(self.members)
        theirs = other.children
        for pe, a in self.children.items():
            if pe in gone:
                continue
            b = theirs.get(pe)
            sub = a if b is None else a.recursive_difference(b)
            if not sub.empty():
                out.children[pe] = sub
        return out

    def leaves(self) -> FieldSet:
        """Only the paths no other path in the set goes below."""
        out = FieldSet()
        out.members = {pe for pe in self.members if not self.has_prefix(pe)}
        for pe, c in self.children.items():
            sub = c.leaves()
            if not sub.empty():
                out.children[pe] = sub
        return out

    # -- fieldsV1 ---------------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """The ``fieldsV1`` JSON object of this set, key order as Kubernetes writes it."""
        return self._emit(False)

    def _emit(self, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        kids = {pe: c for pe, c in self.children.items() if not c.empty()}
        if include_self and (self.members or kids):
            out["."] = {}
        for pe in sorted(self.members | kids.keys()):
            child = kids.get(pe)
            if child is None:
                out[encode_element(pe)] = {}
            else:
                out[encode_element(pe)] = child._emit(pe in self.members)
        return out

    @classmethod
    def from_fields_v1(cls, value: Any) -> FieldSet:
        """The set a ``fieldsV1`` object encodes; raises ``BadFieldsV1``."""
        if not isinstance(value, dict):
            raise BadFieldsV1("fieldsV1 is not a JSON object")
        out = cls()
        out._read(value, 0)
        return out

    def _read(self, value: dict[str, Any], depth: int) -> bool:
        """Fill from ``value``; returns whether it held ``"."``."""
        if depth > 200:
            raise BadFieldsV1("fieldsV1 nests too deeply")
        is_member = False
        for text, sub in value.items():
            if text == ".":
                is_member = True
                continue
            try:
                pe = decode_element(text)
            except BadPathElement as exc:
                raise BadFieldsV1(str(exc)) from None
            if not isinstance(sub, dict):
                raise BadFieldsV1(f"value of {text} is not a JSON object")
            if not sub:
                self.members.add(pe)
                continue
            child = FieldSet()
            if child._read(sub, depth + 1):
                self.members.add(pe)
            if not child.empty():
                self.children[pe] = child
        return is_member


_EMPTY = FieldSet()
