"""YAML as Kubernetes reads it: ``sigs.k8s.io/yaml`` over go-yaml v2, into JSON values.

The embedded API server (``application/yaml`` bodies) and ``kubewerk validate`` / ``lint``
(manifests on disk) read YAML here, so a manifest means the same in both places and the
same as on a cluster. PyYAML's C parser composes the node tree (marks kept, so a reader
can map a value back to its line); go-yaml v2's rules then make the values:

- **Scalars**: no base-60 numbers (``22:22`` is a string); timestamps stay strings;
  ``y``/``Y``/``n``/``N``, ``yes``/``no``, ``on``/``off`` are booleans; integers in the
  forms ``strconv.ParseInt(s, 0, 64)`` reads once underscores are dropped (a leading
  ``0`` is octal); integers outside int64 become float64 and numbers too large for
  float64 stay the string they were written as; ``.nan`` and ``.inf`` are refused (Go's
  JSON encoder cannot write them); ``!!binary`` becomes its decoded text, ``!!set`` a
  mapping of nulls; a tag nobody knows is read by the node's shape.
- **Mapping keys** become strings as ``sigs.k8s.io/yaml`` makes them (``1`` → ``"1"``,
  ``true`` → ``"true"``, a float in float32's shortest form); a null, sequence or mapping
  key is refused.
- **Merge keys** (``<<``) are set where they stand, as go-yaml v2 decodes a map: they
  replace the keys written before them and are replaced by those after (YAML 1.1, and
  PyYAML, let explicit keys win wherever they stand); a sequence of mappings merges
  with its earlier items winning.
- **Aliases** are expanded into independent copies (changing one place never changes
  another). :func:`check_aliases` refuses, before anything is expanded, a document whose
  expansion is mostly aliases as go-yaml refuses it (``document contains excessive
  aliasing``: more than 99% of the decoded nodes from aliases up to 400,000 nodes,
  falling to 10% at 4,000,000; go-yaml checks the ratio while decoding, here it is
  checked once on the totals, which the composed graph gives without expanding it) and
  an anchor that contains itself (which a ``<<`` merge key can otherwise build).

Syntax errors are PyYAML's ``yaml.YAMLError`` (with marks; :func:`go_error_text` words
one as go-yaml does); what go-yaml or the JSON conversion refuses is :class:`GoYAMLError`.
Limits on size and depth are the reader's (the API server's are in
``kubewerk.apiserver.decode``); a document nested deeper than Python's recursion limit
raises ``RecursionError``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubewerk.core.gofmt import INT64_MAX, INT64_MIN
from kubewerk.core.jsoncopy import copy_tree

__all__ = [
    "GoYAMLError",
    "GoYAMLLoader",
    "check_aliases",
    "compose_document",
    "compose_documents",
    "go_error_text",
    "may_have_aliases",
    "node_value",
]

# go-yaml's allowedAliasRatio range
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BINARY = "tag:yaml.org,2002:binary"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SET = "tag:yaml.org,2002:set"
_OMAP = "tag:yaml.org,2002:omap"
_PAIRS = "tag:yaml.org,2002:pairs"
_MERGE = "tag:yaml.org,2002:merge"
_STANDARD = "tag:yaml.org,2002:"


class GoYAMLError(ValueError):
    """A document go-yaml (or ``sigs.k8s.io/yaml``'s JSON conversion) refuses; ``str()``
    is its text (``yaml: ...`` or ``json: ...``), ``line`` the 1-based line of the node
    at fault when one is known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


# -- scalars ------------------------------------------------------------------------------

# go-yaml v2's plain-scalar rules where they differ from PyYAML's YAML 1.1 resolver:
# no base-60 numbers, Go's float syntax, integers in the forms strconv.ParseInt(s, 0, 64)
# reads once underscores are dropped, and y/Y/n/N as booleans.
_GO_INT = re.compile(r"^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$")
_GO_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_GO_BOOL = re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE"
    r"|on|On|ON|off|Off|OFF)$"
)
_BOOL_VALUES = {
    "y": True,
    "yes": True,
    "true": True,
    "on": True,
    "n": False,
    "no": False,
    "false": False,
    "off": False,
}


def _bool_value(text: str) -> bool:
    value = _BOOL_VALUES.get(text.lower())
    if value is None:
        raise GoYAMLError(f"yaml: cannot decode !!str `{text}` as a !!bool")
    return value


def _int_value(text: str) -> Any:
    plain = text.replace("_", "")
    digits = plain.lstrip("+-")
    try:
        if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            value = int(plain, 8)  # Go's base-0 parse reads a leading 0 as octal
        else:
            value = int(plain, 0)
    except ValueError:
        return _float_value(text) if _GO_FLOAT.match(text) else text
    if INT64_MIN <= value <= INT64_MAX:
        return value
    try:
        return float(value)  # beyond int64: float64, as the JSON decoder then reads it
    except OverflowError:
        return text  # no int64, uint64 or float64 holds it: go-yaml keeps the string


def _float_value(text: str) -> Any:
    lowered = text.lower()
    if lowered == ".nan":
        raise GoYAMLError("json: unsupported value: NaN")
    if lowered.lstrip("+-") == ".inf":
        raise GoYAMLError(f"json: unsupported value: {'-' if text.startswith('-') else '+'}Inf")
    try:
        value = float(text)
    except ValueError:
        return text
    if math.isinf(value):
        return text  # too large for float64: go-yaml keeps the string
    return value


def _binary_value(text: str) -> str:
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise GoYAMLError("yaml: !!binary value contains invalid base64 data") from None
    return data.decode("utf-8", "replace")


def _key_string(key: Any) -> str:
    """A mapping key as the JSON key ``sigs.k8s.io/yaml`` makes of it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32_text(key)
    if key is None:
        raise GoYAMLError("unsupported map key of type: <nil>")
    raise GoYAMLError(
        "yaml: invalid map key: "
        f"{'[]interface {}' if isinstance(key, list) else 'map[string]interface {}'}"
    )


def _go_float32_text(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)``: the shortest digits that read back as
    the same float32, in exponent form when the exponent is below -4 or at least 6."""
    single = (
        struct.unpack("f", struct.pack("f", value))[0]
        if abs(value) <= 3.4028234663852886e38
        else value
    )
    for precision in range(1, 10):
        text = f"{single:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if exponent < -4 or exponent >= 6:
        return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return (
        f"{float(text):f}".rstrip("0").rstrip(".")
        if "." in f"{float(text):f}"
        else f"{float(text):f}"
    )


# -- the loader: go-yaml's resolvers, and constructors for what the fast build leaves -----

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class GoYAMLLoader(_SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader (the C parser when installed) with go-yaml v2's scalar rules
    and JSON-only results. :func:`node_value` builds documents (merge keys included)
    without its constructors; they serve unusual tags only."""


GoYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _FLOAT, _BOOL)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "yYnNtTfFoO":
    GoYAMLLoader.add_implicit_resolver(_BOOL, _GO_BOOL, [_first])
for _first in "-+0123456789":
    GoYAMLLoader.add_implicit_resolver(_INT, _GO_INT, [_first])
for _first in "-+.0123456789":
    GoYAMLLoader.add_implicit_resolver(_FLOAT, _GO_FLOAT, [_first])


def _construct_bool(loader: Any, node: ScalarNode) -> Any:
    return _bool_value(str(loader.construct_scalar(node)))


def _construct_int(loader: Any, node: ScalarNode) -> Any:
    return _int_value(str(loader.construct_scalar(node)))


def _construct_float(loader: Any, node: ScalarNode) -> Any:
    return _float_value(str(loader.construct_scalar(node)))


def _construct_string(loader: Any, node: ScalarNode) -> Any:
    return loader.construct_scalar(node)


def _construct_binary(loader: Any, node: ScalarNode) -> Any:
    return _binary_value(str(loader.construct_scalar(node)))


def _construct_mapping(loader: Any, node: MappingNode) -> Any:
    """A mapping with go-yaml v2's merge rule, as :func:`_fill` builds one (PyYAML's
    ``flatten_mapping`` would apply YAML 1.1's, and rewrite the node in place)."""
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if _is_merge(key_node):
            for merged in _merged_mappings(value_node):
                result.update(_construct_mapping(loader, merged))
            continue
        key = loader.construct_object(key_node, deep=True)
        result[_key_string(key)] = loader.construct_object(value_node, deep=True)
    return result


def _construct_sequence(loader: Any, node: SequenceNode) -> Any:
    return loader.construct_sequence(node, deep=True)


def _construct_any(loader: Any, node: Node) -> Any:
    """A node with a tag nobody knows: go-yaml decodes it by its shape."""
    if isinstance(node, MappingNode):
        return _construct_mapping(loader, node)
    if isinstance(node, SequenceNode):
        return _construct_sequence(loader, node)
    return loader.construct_scalar(node)


GoYAMLLoader.add_constructor(_BOOL, _construct_bool)
GoYAMLLoader.add_constructor(_INT, _construct_int)
GoYAMLLoader.add_constructor(_FLOAT, _construct_float)
GoYAMLLoader.add_constructor(_TIMESTAMP, _construct_string)
GoYAMLLoader.add_constructor(_BINARY, _construct_binary)
GoYAMLLoader.add_constructor(_MAP, _construct_mapping)
GoYAMLLoader.add_constructor(_SET, _construct_mapping)
GoYAMLLoader.add_constructor(_SEQ, _construct_sequence)
GoYAMLLoader.add_constructor(_OMAP, _construct_sequence)
GoYAMLLoader.add_constructor(_PAIRS, _construct_sequence)
GoYAMLLoader.add_constructor(None, _construct_any)


# -- composing ----------------------------------------------------------------------------


def compose_documents(stream: str | bytes) -> Iterator[Node]:
    """The node tree of every document in ``stream``, in order (marks kept), as
    ``yaml.compose_all`` gives them (an empty document between two ``---`` is a null
    scalar); raises ``yaml.YAMLError`` on a syntax error."""
    loader = GoYAMLLoader(stream)
    try:
        while loader.check_node():
            yield loader.get_node()
    finally:
        loader.dispose()


def compose_document(stream: str | bytes) -> Node | None:
    """The node tree of the one document in ``stream`` (None when it is empty); raises
    ``yaml.YAMLError`` on a syntax error or a second document."""
    loader = GoYAMLLoader(stream)
    try:
        node: Node | None = loader.get_single_node()
        return node
    finally:
        loader.dispose()


def go_error_text(exc: yaml.YAMLError) -> str:
    """A PyYAML error in go-yaml's shape: ``yaml: line N: problem``."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"yaml: line {mark.line + 1}: {problem}"
    return f"yaml: {problem}"


# -- aliases --------------------------------------------------------------------------------

# what may stand before an anchor or alias token (the start of a line or a node, a flow
# indicator, or the JSON-like ``"k":*a``), and what may not follow it (an anchor name is
# at least one character other than white space and flow indicators)
_BEFORE_TOKEN = frozenset(" \t\r\n\x85\u2028\u2029\ufeff[{,:?-")
_NOT_NAME = frozenset(" \t\r\n\x85\u2028\u2029\ufeff,[]{}")


def may_have_aliases(text: str) -> bool:
    """False only when ``text`` (decoded) has no alias: it holds no ``&`` or no ``*``
    where an anchor or alias token can stand. A reader may then skip
    :func:`check_aliases`. Text such as ``a && b`` or ``*emphasis*`` in descriptions
    makes it answer True for nothing; it never answers False for a real alias."""
    return _has_token(text, "&") and _has_token(text, "*")


def _has_token(text: str, mark: str) -> bool:
    i = text.find(mark)
    end = len(text) - 1
    while i != -1:
        if (i == 0 or text[i - 1] in _BEFORE_TOKEN) and i < end and text[i + 1] not in _NOT_NAME:
            return True
        i = text.find(mark, i + 1)
    return False


def check_aliases(root: Node) -> bool:
    """Refuse excessive aliasing and self-containing anchors (:class:`GoYAMLError`);
    True when the document has aliases.

    Counts, on the composed graph (where an alias is a second reference to its anchor's
    node), what go-yaml's decoder counts while expanding it: every node visited, alias
    nodes and expansions included, and among them the visits made inside an alias
    expansion. Cost: O(distinct nodes), however large the expansion; a reader may skip
    the walk for a text :func:`may_have_aliases` clears.
    """
    if not _has_repeated_nodes(root):
        return False
    on_path: set[int] = {id(root)}
    seen: set[int] = {id(root)}
    alias_edges: set[tuple[int, int]] = set()
    alias_targets: list[Node] = []
    # document order: the first reference to a node defines it, later ones are aliases
    stack: list[tuple[Node, list[Node], int]] = [(root, _children(root), 0)]
    while stack:
        node, children, index = stack[-1]
        if index >= len(children):
            stack.pop()
            on_path.discard(id(node))
            continue
        stack[-1] = (node, children, index + 1)
        child = children[index]
        if id(child) in on_path:
            raise GoYAMLError(
                f"yaml: anchor '{getattr(child, 'anchor', None) or '?'}' value contains itself",
                child.start_mark.line + 1,
            )
        if id(child) in seen:
            alias_edges.add((id(node), index))
            alias_targets.append(child)
            continue
        seen.add(id(child))
        on_path.add(id(child))
        stack.append((child, _children(child), 0))
    if not alias_targets:
        return False
    expanded = _expanded_sizes(root, alias_edges)
    decode_count = 1 + expanded[id(root)]  # the document node, then everything under it
    alias_count = sum(expanded[id(target)] for target in alias_targets)
    if (
        alias_count > 100
        and decode_count > 1000
        and alias_count / decode_count > _allowed_alias_ratio(decode_count)
    ):
        raise GoYAMLError("yaml: document contains excessive aliasing")
    return True


def _has_repeated_nodes(root: Node) -> bool:
    """Whether any node is reached twice (an alias; half the cost of the full walk)."""
    if type(root) is ScalarNode:
        return False
    seen: set[int] = {id(root)}
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        children = (
            node.value
            if type(node) is SequenceNode
            else [part for pair in node.value for part in pair]
        )
        for child in children:
            key = id(child)
            if key in seen:
                return True
            seen.add(key)
            if type(child) is not ScalarNode:
                stack.append(child)
    return False


def _expanded_sizes(root: Node, alias_edges: set[tuple[int, int]]) -> dict[int, int]:
    """Per node: the visits go-yaml makes decoding it with every alias expanded
    (the node itself, its children's, and one more per alias node among them)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if children_done:
            sizes[key] = 1 + sum(
                sizes[id(child)] + ((key, index) in alias_edges)
                for index, child in enumerate(children)
            )
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= _ALIAS_RATIO_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


# -- values ---------------------------------------------------------------------------------


class _Unusual(Exception):
    """A node the fast build leaves to the loader's constructors (a standard tag on a
    node of another shape)."""


def node_value(root: Node) -> Any:
    """The JSON value of a composed document, aliases expanded into independent copies.

    Call :func:`check_aliases` first on a document that may have aliases: this function
    expands what it is given. Raises :class:`GoYAMLError` for what go-yaml refuses (and
    ``yaml.YAMLError`` for what PyYAML's constructors refuse on unusual tags).
    """
    try:
        return _build(root)
    except _Unusual:
        pass
    loader = GoYAMLLoader("")
    try:
        value = loader.construct_document(root)
    finally:
        loader.dispose()
    # the constructors share one value for every alias of an anchor
    return copy_tree(value)


def _build(node: Node) -> Any:
    tag = node.tag
    if tag == _STR and type(node) is ScalarNode:
        return node.value
    if tag == _MAP and type(node) is MappingNode:
        return _mapping(node)
    if tag == _SEQ and type(node) is SequenceNode:
        return [_build(item) for item in node.value]
    if type(node) is ScalarNode:
        return _scalar(node)
    if type(node) is MappingNode and (tag == _SET or not tag.startswith(_STANDARD)):
        return _mapping(node)
    if type(node) is SequenceNode and (tag in (_OMAP, _PAIRS) or not tag.startswith(_STANDARD)):
        return [_build(item) for item in node.value]
    raise _Unusual


def _mapping(node: MappingNode) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _fill(node, out)
    return out


def _fill(node: MappingNode, out: dict[str, Any]) -> None:
    """Set ``node``'s pairs into ``out`` in document order, as go-yaml v2's ``mapping``
    does: a later key replaces an earlier one, and a ``<<`` merge key sets its mapping's
    keys where it stands, so it replaces the keys written before it and is replaced by
    those after it (not YAML 1.1's rule that explicit keys always win, which PyYAML's
    constructors follow)."""
    for key_node, value_node in node.value:
        if key_node.tag == _STR and type(key_node) is ScalarNode:
            out[key_node.value] = _build(value_node)
        elif _is_merge(key_node):
            for merged in _merged_mappings(value_node):
                _fill(merged, out)
        else:
            key = _build(key_node)
            value = _build(value_node)
            out[_key_string(key)] = value


def _is_merge(key_node: Node) -> bool:
    return key_node.tag == _MERGE and type(key_node) is ScalarNode


def _merged_mappings(node: Node) -> list[MappingNode]:
    """go-yaml v2's ``merge``: the mappings a ``<<`` value sets, in the order they are
    set: a mapping (or an alias of one), or a sequence's mappings from its last item to
    its first (so earlier items win); anything else is go-yaml's error."""
    if type(node) is MappingNode:
        return [node]
    if type(node) is SequenceNode and all(type(item) is MappingNode for item in node.value):
        return list(reversed(node.value))
    raise GoYAMLError("yaml: map merge requires map or sequence of maps as the value")


def _scalar(node: ScalarNode) -> Any:
    tag = node.tag
    try:
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return _bool_value(node.value)
        if tag == _INT:
            return _int_value(node.value)
        if tag == _FLOAT:
            return _float_value(node.value)
        if tag == _BINARY:
            return _binary_value(node.value)
    except GoYAMLError as exc:
        exc.line = node.start_mark.line + 1
        raise
    if tag in (_MAP, _SEQ, _SET, _OMAP, _PAIRS):
        raise _Unusual  # the constructors' own error for a scalar where they want more
    return node.value  # strings, timestamps, and tags nobody knows
