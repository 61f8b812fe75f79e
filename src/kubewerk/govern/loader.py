"""Reading inputs: files, directories (recursive), ``-`` (stdin) and ``git:REV:PATH``.

Every input is split into documents (multi-document YAML, JSON, and ``kind: List`` /
``*List`` objects expanded into their ``items``). YAML is read by ``kubewerk.core.yamlgo``,
as a cluster (and the embedded API server) reads it: go-yaml v2's scalars (timestamps
and base-60 numbers stay strings, map keys become strings), aliases expanded into
independent copies, and documents refused where go-yaml refuses them (excessive
aliasing, an anchor that contains itself, ``.nan``). The node tree is kept, so that any
location in a document can be mapped back to its line. Unreadable input raises
:class:`InputError`, whose text names the file and line.

No input is read past the input limit (:mod:`kubewerk.core.inputs`: 64 MiB, some forty
of the largest CRDs published, unless ``--max-input-bytes`` sets another): a longer one,
or an endless one (``/dev/zero``), is refused once one byte more has arrived, so memory
stays bounded whatever is named. A directory walk takes regular files only (a FIFO,
socket or device there named ``*.yaml`` is skipped instead of blocking the read) and
does not follow symbolic links to directories; a FIFO named on the command line
(``<(kustomize build)``) is read.
"""

from __future__ import annotations

import gc
import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO
from urllib.parse import quote

import orjson
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubewerk.core.inputs import InputTooLarge, read_bounded
from kubewerk.core.yamlgo import (
    GoYAMLError,
    check_aliases,
    compose_documents,
    may_have_aliases,
    node_value,
)
from kubewerk.govern.findings import Finding, Severity

YAML_SUFFIXES = (".yaml", ".yml", ".json")


class InputError(Exception):
    """Input that cannot be read or parsed; ``str()`` is ``FILE:LINE: message``."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.detail = message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")


@dataclass(slots=True)
class Source:
    """One input: its display name, a URI for SARIF and its text."""

    name: str
    uri: str
    text: str
    is_json: bool = False
    _nodes: list[Node] | None = field(default=None, repr=False)

    def nodes(self) -> list[Node]:
        """The YAML node tree of every document (composed on first use, for JSON)."""
        if self._nodes is None:
            try:
                self._nodes = list(compose_documents(self.text))
            except yaml.YAMLError:
                self._nodes = []
        return self._nodes


@dataclass(slots=True)
class Document:
    """One object read from a source.

    ``base`` is the location of this object inside the parsed document (non-empty for
    items of a ``List``); :meth:`line_of` maps a location relative to the object to
    a 1-based line in the source (``None`` if it cannot be found).
    """

    source: Source
    index: int
    data: Any
    base: tuple[str | int, ...] = ()
    node: Node | None = None

    def line_of(self, location: Sequence[str | int]) -> int | None:
        node = self._root_node()
        if node is None:
            return None
        line: int = node.start_mark.line + 1
        for part in (*self.base, *location):
            if isinstance(node, MappingNode):
                for key, value in node.value:
                    if isinstance(key, ScalarNode) and key.value == str(part):
                        line = key.start_mark.line + 1
                        node = value
                        break
                else:
                    return line
            elif isinstance(node, SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    return line
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def finding(
        self,
        rule: str,
        severity: Severity,
        message: str,
        location: Sequence[str | int],
        *,
        crd: str,
        versions: tuple[str, ...] = (),
        field: str = "",
        extra: tuple[tuple[str, str], ...] = (),
    ) -> Finding:
        """A finding about this object: ``location`` (relative to the object) becomes
        the finding's line and its location in the parsed document."""
        return Finding(
            rule=rule,
            severity=severity,
            message=message,
            file=self.source.name,
            line=self.line_of(location),
            document=self.index,
            crd=crd,
            versions=versions,
            location=(*self.base, *location),
            field=field,
            extra=extra,
        )

    def _root_node(self) -> Node | None:
        if self.node is None:
            # JSON input: compose it as YAML only now that a line is wanted
            nodes = self.source.nodes()
            if self.index < len(nodes):
                self.node = nodes[self.index]
        return self.node


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic trees.

    Parsing allocates millions of containers that are never garbage; each generation-2
    collection would traverse all of them. Restores the previous state on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _document_value(source: Source, node: Node, may_alias: bool) -> Any:
    """One composed document's value as a cluster reads it (``core.yamlgo``)."""
    try:
        if may_alias:
            check_aliases(node)
        return node_value(node)
    except GoYAMLError as exc:
        raise InputError(
            source.name, exc.line, f"invalid YAML: {str(exc).removeprefix('yaml: ')}"
        ) from None
    except RecursionError:
        line = node.start_mark.line + 1
        raise InputError(source.name, line, "document nests too deeply") from None


def _yaml_error(source: Source, exc: yaml.YAMLError) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = f"invalid YAML: {context + ', ' if context else ''}{problem}"
    return InputError(source.name, line, text)


def parse(source: Source) -> list[Document]:
    """Split a source into documents; ``List`` objects become one document per item.

    Empty documents are dropped. Raises :class:`InputError` for malformed input.
    """
    raw: list[tuple[Any, Node | None]] = []
    node: Node | None
    if source.is_json:
        try:
            raw.append((orjson.loads(source.text), None))
        except orjson.JSONDecodeError as exc:
            raise InputError(source.name, exc.lineno, f"invalid JSON: {exc.msg}") from None
    else:
        may_alias = may_have_aliases(source.text)
        try:
            with gc_paused():
                for node in compose_documents(source.text):
                    raw.append((_document_value(source, node, may_alias), node))
        except yaml.YAMLError as exc:
            raise _yaml_error(source, exc) from None
    docs: list[Document] = []
    for index, (data, root) in enumerate(raw):
        node = root
        if data is None:
            continue
        doc = Document(source, index, data, (), node)
        items = data.get("items") if isinstance(data, dict) else None
        kind = data.get("kind") if isinstance(data, dict) else None
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            for i, item in enumerate(items):
                docs.append(Document(source, index, item, ("items", i), node))
        else:
            docs.append(doc)
    return docs


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(name, line, "not UTF-8 text") from None


def _uri_for(path: Path) -> str:
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path.resolve().as_uri()
    return quote(rel.as_posix())


def read_limited(stream: IO[bytes], name: str) -> bytes:
    """All of ``stream`` if it holds at most the input limit in force
    (``kubewerk.core.inputs.max_input_bytes``); else ``InputError`` after reading one byte
    more than that (never more)."""
    try:
        return read_bounded(stream)
    except InputTooLarge as exc:
        raise InputError(name, None, str(exc)) from None


def read_file(path: Path, name: str | None = None) -> Source:
    """Read one file (at most the input limit); JSON when its name ends in ``.json``."""
    display = name or str(path)
    try:
        with path.open("rb") as stream:
            data = read_limited(stream, display)
    except OSError as exc:
        raise InputError(display, None, f"cannot read: {exc.strerror or exc}") from None
    return Source(display, _uri_for(path), _decode(display, data), path.suffix == ".json")


def read_git(spec: str, cwd: Path | None = None) -> Source:
    """Read ``git:REV:PATH`` with ``git show REV:PATH`` in the current directory, at most
    the input limit of it (``git`` is stopped past that).

    PATH is relative to the repository root, or to the current directory when it
    starts with ``./`` (as git itself treats it).
    """
    rest = spec[len("git:") :]
    rev, sep, path = rest.partition(":")
    if not sep or not rev or not path:
        raise InputError(spec, None, "expected git:REV:PATH")
    try:
        proc = subprocess.Popen(
            ["git", "show", f"{rev}:{path}"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise InputError(spec, None, f"cannot run git: {exc}") from None
    with proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            # the blob streams in under the input limit (git's few stderr lines fit the pipe)
            data = read_limited(proc.stdout, spec)
        except InputError:
            proc.kill()
            raise
        errors = proc.stderr.read(64 * 1024)
    if proc.returncode != 0:
        message = errors.decode("utf-8", "replace").strip().splitlines()
        raise InputError(spec, None, message[-1] if message else "git show failed")
    uri = quote(path[2:] if path.startswith("./") else path)
    return Source(spec, uri, _decode(spec, data), path.endswith(".json"))


def read_stdin(stream: BinaryIO | None = None) -> Source:
    """Read standard input (at most the input limit); JSON when it parses as JSON."""
    data = read_limited(stream or sys.stdin.buffer, "<stdin>")
    text = _decode("<stdin>", data)
    stripped = text.lstrip()
    is_json = stripped.startswith("{")
    if is_json:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            is_json = False  # let the YAML parser report (or accept) it
    return Source("<stdin>", "stdin", text, is_json)


def expand(paths: Sequence[str]) -> list[str | Path]:
    """Turn arguments into inputs: directories walk recursively to their YAML/JSON
    files (sorted, hidden entries skipped); ``-`` and ``git:`` specs pass through."""
    out: list[str | Path] = []
    for arg in paths:
        if arg == "-" or (arg.startswith("git:") and not os.path.exists(arg)):
            out.append(arg)
            continue
        path = Path(arg)
        if path.is_dir():
            found: list[Path] = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for fname in files:
                    if fname.endswith(YAML_SUFFIXES) and not fname.startswith("."):
                        candidate = Path(root) / fname
                        if _not_a_file(candidate):
                            continue
                        found.append(candidate)
            out.extend(sorted(found))
        elif path.exists():
            out.append(path)
        else:
            raise InputError(arg, None, "no such file or directory")
    return out


def _not_a_file(path: Path) -> bool:
    """Whether ``path`` exists and is not a regular file (after symbolic links): a FIFO,
    socket or device a directory walk must not open. A dangling link is left to the read,
    which reports it."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def read_input(item: str | Path, stdin: BinaryIO | None = None) -> Source:
    """Read one expanded input (a path, ``-`` or ``git:REV:PATH``)."""
    if isinstance(item, Path):
        return read_file(item)
    if item == "-":
        return read_stdin(stdin)
    return read_git(item)


def iter_sources(paths: Sequence[str], stdin: BinaryIO | None = None) -> Iterator[list[Document]]:
    """Read and parse the inputs one at a time, yielding each one's documents.

    Streaming keeps only one file's YAML node tree alive at a time (it is what maps
    findings to lines), which keeps memory flat and the garbage collector cheap."""
    for item in expand(paths):
        yield parse(read_input(item, stdin))
