"""The Kubernetes CEL function libraries, as custom functions for cel-expr-python.

Covers lists (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf``),
regex (``find``, ``findAll``), url, quantity, ip and cidr, semver, format and sets.

cel-expr-python cannot carry opaque values (``kubernetes.Quantity``…) through the
runtime, so each library value is a CEL map tagged with the key ``"@kw"`` and the
functions dispatch on that tag. Results and errors match Kubernetes'; what differs is
only the static type (``type(quantity('1'))`` is ``map``), see docs/schema.md.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import re2
from cel_expr_python import cel

from kubewerk.core.quantity import suffixed_value

from .._regexp import compile_go_regexp
from .._structural import dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors
from ..formats import is_base64, is_date, is_datetime

T = cel.Type
TAG: Final = "@kw"
OBJ: Final = T.Map(T.STRING, T.DYN)


class CelError(Exception):
    """A library function failed; the rule evaluation reports ``str(err)``."""


def _tagged(kind: str, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {TAG: kind}
    out.update(fields)
    return out


def _library_type(value: Any) -> str:
    """The library type of a tagged value (``"quantity"``, ``"ip"`` …), or ``""``."""
    if isinstance(value, dict):
        tag = value.get(TAG)
        if isinstance(tag, str):
            return tag
    return ""


def _expect(value: Any, kind: str) -> dict[str, Any]:
    if _library_type(value) != kind:
        raise CelError(f"no such overload: expected {kind}")
    return value  # type: ignore[no-any-return]


# ----------------------------------------------------------------------- lists
def _comparable(items: list[Any]) -> list[Any]:
    kinds = {type(x) for x in items}
    if kinds <= {int, float} and bool not in kinds:
        return items
    if len(kinds) > 1:
        raise CelError("no such overload")
    t = kinds.pop() if kinds else None
    if t in (str, bytes, int, float, bool) or t is None:
        return items
    if t is dict and all(_library_type(x) in ("quantity", "semver") for x in items):
        return [_sort_key(x) for x in items]
    raise CelError("no such overload")


def _sort_key(x: Any) -> Any:
    if _library_type(x) == "quantity":
        return Fraction(x["n"])
    if _library_type(x) == "semver":
        return _semver_key(x["v"])
    return x


def list_is_sorted(items: list[Any]) -> bool:
    keys = _comparable(list(items))
    return all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))


def list_sum(items: list[Any]) -> Any:
    items = list(items)
    if not items:
        return 0
    if all(_library_type(x) == "quantity" for x in items):
        return _tagged_quantity(sum((Fraction(x["n"]) for x in items), Fraction(0)))
    if all(type(x) is int for x in items):
        total = sum(items)
        if not -(2**63) <= total < 2**63:
            raise CelError("integer overflow")
        return total
    if all(type(x) in (int, float) for x in items):
        return float(sum(items))
    raise CelError("no such overload")


def list_min(items: list[Any]) -> Any:
    items = list(items)
    if not items:
        raise CelError("min called on empty list")
    keys = _comparable(items)
    return items[min(range(len(items)), key=lambda i: keys[i])]


def list_max(items: list[Any]) -> Any:
    items = list(items)
    if not items:
        raise CelError("max called on empty list")
    keys = _comparable(items)
    best = 0
    for i in range(1, len(items)):
        if keys[i] > keys[best]:
            best = i
    return items[best]


def list_index_of(items: list[Any], value: Any) -> int:
    for i, x in enumerate(items):
        if _cel_equal(x, value):
            return i
    return -1


def list_last_index_of(items: list[Any], value: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if _cel_equal(items[i], value):
            return i
    return -1


def _cel_equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return bool(a == b)


# ----------------------------------------------------------------------- regex
def regex_find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def regex_find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    out: list[str] = []
    for m in _regex(pattern).finditer(s):
        out.append(m.group(0))
        if 0 < limit <= len(out):
            break
    return out


def _regex(pattern: str) -> Any:
    try:
        return compile_go_regexp(pattern)
    except re2.error as exc:
        raise CelError(f"error parsing regexp: {exc}") from exc


# ------------------------------------------------------------------------- url
def _parse_url(s: str) -> Any:
    if not s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return None
    parts = urlsplit(s)
    if not parts.scheme and not s.startswith("/"):
        return None
    return parts


def is_url(s: str) -> bool:
    return _parse_url(s) is not None


def url(s: str) -> dict[str, Any]:
    if _parse_url(s) is None:
        raise CelError(
            f"URL parse error during conversion from string: parse {s!r}: invalid URI for request"
        )
    return _tagged("url", v=s)


def url_scheme(u: Any) -> str:
    return str(urlsplit(_expect(u, "url")["v"]).scheme)


def url_host(u: Any) -> str:
    return str(urlsplit(_expect(u, "url")["v"]).netloc.rpartition("@")[2])


def url_hostname(u: Any) -> str:
    host = url_host(u)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.partition(":")[0]


def url_port(u: Any) -> str:
    host = url_host(u)
    if host.startswith("["):
        rest = host[host.find("]") + 1 :]
        return rest[1:] if rest.startswith(":") else ""
    return host.partition(":")[2]


def url_escaped_path(u: Any) -> str:
    return str(urlsplit(_expect(u, "url")["v"]).path)


def url_query(u: Any) -> dict[str, list[str]]:
    return {
        k: list(v)
        for k, v in parse_qs(urlsplit(_expect(u, "url")["v"]).query, keep_blank_values=True).items()
    }


# -------------------------------------------------------------------- quantity
_QTY = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(.*)\Z")


def parse_quantity(s: str) -> Fraction | None:
    """``resource.ParseQuantity``'s value (rounded up to nanos, capped at ``2**63 - 1``,
    as it keeps it), or None if ``s`` is not a quantity."""
    m = _QTY.match(s)
    if not m:
        return None
    sign, number, suffix = m.groups()
    found = suffixed_value(sign + number, suffix)
    return None if found is None else found[0]


def _tagged_quantity(value: Fraction) -> dict[str, Any]:
    """A ``kubernetes.Quantity`` value holding ``value`` exactly."""
    return _tagged("quantity", n=str(value))


def is_quantity(s: str) -> bool:
    return parse_quantity(s) is not None


def quantity(s: str) -> dict[str, Any]:
    v = parse_quantity(s)
    if v is None:
        raise CelError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return _tagged_quantity(v)


def _quantity_amount(q: Any) -> Fraction:
    """The exact amount of a Quantity value; no such overload for anything else."""
    return Fraction(_expect(q, "quantity")["n"])


def q_is_integer(q: Any) -> bool:
    v = _quantity_amount(q)
    return v.denominator == 1 and -(2**63) <= v < 2**63


def q_as_integer(q: Any) -> int:
    v = _quantity_amount(q)
    if v.denominator != 1 or not -(2**63) <= v < 2**63:
        raise CelError("cannot convert value to integer")
    return int(v)


def q_as_float(q: Any) -> float:
    return float(_quantity_amount(q))


def q_sign(q: Any) -> int:
    v = _quantity_amount(q)
    return (v > 0) - (v < 0)


def _amount_or_int(x: Any) -> Fraction:
    """The amount of a Quantity or of a CEL int (``add``/``sub`` take both)."""
    if type(x) is int:
        return Fraction(x)
    return _quantity_amount(x)


def q_add(a: Any, b: Any) -> dict[str, Any]:
    return _tagged_quantity(_quantity_amount(a) + _amount_or_int(b))


def q_sub(a: Any, b: Any) -> dict[str, Any]:
    return _tagged_quantity(_quantity_amount(a) - _amount_or_int(b))


# ---------------------------------------------------------------------- ip/cidr
def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in s:
        return None
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None  # IPv4-mapped IPv6 addresses are not allowed
    return addr


def is_ip(s: str) -> bool:
    return _parse_ip(s) is not None


def ip(s: str) -> dict[str, Any]:
    addr = _parse_ip(s)
    if addr is None:
        if "%" in s:
            raise CelError(f"IP address with zone value is not allowed: {s}")
        raise CelError(
            f"IP Address {s!r} parse error during conversion "
            f"from string: ParseAddr({s!r}): unable to parse IP"
        )
    return _tagged("ip", v=str(addr))


def ip_is_canonical(s: str) -> bool:
    addr = _parse_ip(s)
    if addr is None:
        raise CelError(f"IP Address {s!r} parse error during conversion from string")
    return str(addr) == s


def _ip_address(x: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address of an IP value; no such overload for anything else."""
    return ipaddress.ip_address(_expect(x, "ip")["v"])


def ip_family(x: Any) -> int:
    return _ip_address(x).version


def ip_is_unspecified(x: Any) -> bool:
    return _ip_address(x).is_unspecified


def ip_is_loopback(x: Any) -> bool:
    return _ip_address(x).is_loopback


def ip_is_link_local_multicast(x: Any) -> bool:
    a = _ip_address(x)
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a.is_multicast and (int(a) >> 112) & 0xF == 2


def ip_is_link_local_unicast(x: Any) -> bool:
    a = _ip_address(x)
    return a.is_link_local and not a.is_multicast


def ip_is_global_unicast(x: Any) -> bool:
    a = _ip_address(x)
    if a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


def _parse_cidr(s: str) -> tuple[Any, int] | None:
    addr_s, sep, bits = s.partition("/")
    if not sep or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        return None
    addr = _parse_ip(addr_s)
    if addr is None:
        return None
    n = int(bits)
    if n > addr.max_prefixlen:
        return None
    return addr, n


def is_cidr(s: str) -> bool:
    return _parse_cidr(s) is not None


def cidr(s: str) -> dict[str, Any]:
    parsed = _parse_cidr(s)
    if parsed is None:
        raise CelError(
            f"network address {s!r} parse error during conversion "
            f"from string: netip.ParsePrefix({s!r}): bad prefix"
        )
    return _tagged("cidr", v=f"{parsed[0]}/{parsed[1]}")


def _cidr_parts(x: Any) -> tuple[Any, int]:
    """(address, prefix length) of a CIDR value; no such overload for anything else."""
    addr_s, _, bits = _expect(x, "cidr")["v"].partition("/")
    return ipaddress.ip_address(addr_s), int(bits)


def cidr_contains_ip(c: Any, other: Any) -> bool:
    addr, n = _cidr_parts(c)
    target = _ip_address(other) if isinstance(other, dict) else _parse_ip(other)
    if target is None:
        raise CelError(f"IP Address {other!r} parse error during conversion from string")
    if target.version != addr.version:
        return False
    return target in ipaddress.ip_network(f"{addr}/{n}", strict=False)


def cidr_contains_cidr(c: Any, other: Any) -> bool:
    addr, n = _cidr_parts(c)
    if isinstance(other, dict):
        oaddr, on = _cidr_parts(other)
    else:
        parsed = _parse_cidr(other)
        if parsed is None:
            raise CelError(f"network address {other!r} parse error during conversion from string")
        oaddr, on = parsed
    if oaddr.version != addr.version or on < n:
        return False
    return oaddr in ipaddress.ip_network(f"{addr}/{n}", strict=False)


def cidr_ip(c: Any) -> dict[str, Any]:
    return _tagged("ip", v=str(_cidr_parts(c)[0]))


def cidr_masked(c: Any) -> dict[str, Any]:
    addr, n = _cidr_parts(c)
    return _tagged("cidr", v=str(ipaddress.ip_network(f"{addr}/{n}", strict=False)))


def cidr_prefix_length(c: Any) -> int:
    return _cidr_parts(c)[1]


def to_string(x: Any) -> str:
    kind = _library_type(x)
    if kind in ("ip", "cidr", "url", "semver"):
        return str(x["v"])
    raise CelError("no such overload")


# ---------------------------------------------------------------------- semver
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z"
)


def _normalize_semver(s: str) -> str:
    s = s[1:] if s.startswith("v") else s
    core, sep, rest = s.partition("-")
    if not sep:
        core = s.partition("+")[0]
        rest = ""
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    out = ".".join(parts)
    if sep:
        out += "-" + rest
    elif "+" in s:
        out += "+" + s.partition("+")[2]
    return out


def _semver(s: str, normalize: bool = False) -> str | None:
    cand = _normalize_semver(s) if normalize else s
    return cand if _SEMVER.match(cand) else None


def is_semver(s: str, normalize: bool = False) -> bool:
    return _semver(s, normalize) is not None


def semver(s: str, normalize: bool = False) -> dict[str, Any]:
    v = _semver(s, normalize)
    if v is None:
        raise CelError(
            f"Semver {s!r} parse error during conversion from "
            "string: Invalid character(s) found in version"
        )
    return _tagged("semver", v=v)


def _semver_key(v: str) -> tuple[Any, ...]:
    m = _SEMVER.match(v)
    assert m is not None
    pre = m.group(4)
    pre_key: tuple[Any, ...] = (
        (1,)
        if pre is None
        else (0, *[(0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")])
    )
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)), pre_key)


def _semver_text(x: Any) -> str:
    """The version text of a Semver value; no such overload for anything else."""
    return str(_expect(x, "semver")["v"])


def semver_major(x: Any) -> int:
    return _semver_key(_semver_text(x))[0]  # type: ignore[no-any-return]


def semver_minor(x: Any) -> int:
    return _semver_key(_semver_text(x))[1]  # type: ignore[no-any-return]


def semver_patch(x: Any) -> int:
    return _semver_key(_semver_text(x))[2]  # type: ignore[no-any-return]


def compare(a: Any, b: Any) -> int:
    ka, kb = _library_type(a), _library_type(b)
    if ka != kb or ka not in ("quantity", "semver"):
        raise CelError("no such overload")
    x, y = _sort_key(a), _sort_key(b)
    return int((x > y) - (x < y))


def is_less(a: Any, b: Any) -> bool:
    return compare(a, b) < 0


def is_greater(a: Any, b: Any) -> bool:
    return compare(a, b) > 0


# ---------------------------------------------------------------------- format
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


def _qualified_name_errors(value: str) -> list[str]:
    errs: list[str] = []
    name = value
    parts = value.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    elif len(parts) != 1:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME.match(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return errs


def _prefix(fn: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    def check(value: str) -> list[str]:
        if len(value) > 1 and value.endswith("-"):
            value = value[:-1]
        return fn(value)

    return check


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")

FORMATS: Final[dict[str, Callable[[str], list[str]]]] = {
    "dns1123Label": dns1123_label_errors,
    "dns1123Subdomain": dns1123_subdomain_errors,
    "dns1035Label": dns1035_label_errors,
    "qualifiedName": _qualified_name_errors,
    "dns1123LabelPrefix": _prefix(dns1123_label_errors),
    "dns1123SubdomainPrefix": _prefix(dns1123_subdomain_errors),
    "dns1035LabelPrefix": _prefix(dns1035_label_errors),
    "labelValue": _label_value_errors,
    "uri": lambda s: [] if is_url(s) else ["invalid URI"],
    "uuid": lambda s: [] if _UUID.match(s) else ["does not match the UUID format"],
    "byte": lambda s: [] if is_base64(s) else ["invalid base64"],
    "date": lambda s: [] if is_date(s) else ["invalid date"],
    "datetime": lambda s: [] if is_datetime(s) else ["invalid datetime"],
}


def format_validate(f: Any, value: str) -> list[str]:
    """``<Format>.validate(s)``: the error list (an empty list stands for optional.none())."""
    name = _expect(f, "format")["v"]
    return FORMATS[name](value)


# ------------------------------------------------------------------------ sets
def sets_contains(a: list[Any], b: list[Any]) -> bool:
    return all(any(_cel_equal(x, y) for y in a) for x in b)


def sets_equivalent(a: list[Any], b: list[Any]) -> bool:
    return sets_contains(a, b) and sets_contains(b, a)


def sets_intersects(a: list[Any], b: list[Any]) -> bool:
    return any(any(_cel_equal(x, y) for y in a) for x in b)


# ------------------------------------------------------------- declarations
def _guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn Python failures into CEL errors carrying Kubernetes' wording."""

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except CelError:
            raise
        except (ValueError, TypeError, KeyError, AssertionError) as exc:
            raise CelError(str(exc) or "no such overload") from exc

    call.__name__ = getattr(fn, "__name__", "fn")
    return call


def declarations() -> list[Any]:
    """The FunctionDecls of every Kubernetes library, for ``cel.NewEnv(functions=...)``."""
    L = T.List(T.DYN)
    S, B, N, D = T.STRING, T.BOOL, T.INT, T.DOUBLE
    decls: list[Any] = []

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool, Callable[..., Any]]) -> None:
        decls.append(
            cel.FunctionDecl(
                name,
                [
                    cel.Overload(oid, ret, params, is_member=member, impl=_guard(impl))
                    for oid, ret, params, member, impl in overloads
                ],
            )
        )

    fn("isSorted", ("kw_list_is_sorted", B, [L], True, list_is_sorted))
    fn("sum", ("kw_list_sum", T.DYN, [L], True, list_sum))
    fn("min", ("kw_list_min", T.DYN, [L], True, list_min))
    fn("max", ("kw_list_max", T.DYN, [L], True, list_max))
    fn("indexOf", ("kw_list_index_of", N, [L, T.DYN], True, list_index_of))
    fn("lastIndexOf", ("kw_list_last_index_of", N, [L, T.DYN], True, list_last_index_of))
    fn("find", ("kw_regex_find", S, [S, S], True, regex_find))
    fn(
        "findAll",
        ("kw_regex_find_all", T.List(S), [S, S], True, regex_find_all),
        ("kw_regex_find_all_n", T.List(S), [S, S, N], True, regex_find_all),
    )
    fn("url", ("kw_url", OBJ, [S], False, url))
    fn("isURL", ("kw_is_url", B, [S], False, is_url))
    fn("getScheme", ("kw_url_scheme", S, [OBJ], True, url_scheme))
    fn("getHost", ("kw_url_host", S, [OBJ], True, url_host))
    fn("getHostname", ("kw_url_hostname", S, [OBJ], True, url_hostname))
    fn("getPort", ("kw_url_port", S, [OBJ], True, url_port))
    fn("getEscapedPath", ("kw_url_path", S, [OBJ], True, url_escaped_path))
    fn("getQuery", ("kw_url_query", T.Map(S, T.List(S)), [OBJ], True, url_query))
    fn("quantity", ("kw_quantity", OBJ, [S], False, quantity))
    fn("isQuantity", ("kw_is_quantity", B, [S], False, is_quantity))
    fn("isInteger", ("kw_q_is_integer", B, [OBJ], True, q_is_integer))
    fn("asInteger", ("kw_q_as_integer", N, [OBJ], True, q_as_integer))
    fn("asApproximateFloat", ("kw_q_as_float", D, [OBJ], True, q_as_float))
    fn("sign", ("kw_q_sign", N, [OBJ], True, q_sign))
    fn("add", ("kw_q_add", OBJ, [OBJ, T.DYN], True, q_add))
    fn("sub", ("kw_q_sub", OBJ, [OBJ, T.DYN], True, q_sub))
    fn("isLessThan", ("kw_less", B, [OBJ, OBJ], True, is_less))
    fn("isGreaterThan", ("kw_greater", B, [OBJ, OBJ], True, is_greater))
    fn("compareTo", ("kw_compare", N, [OBJ, OBJ], True, compare))
    fn("ip", ("kw_ip", OBJ, [S], False, ip), ("kw_cidr_ip", OBJ, [OBJ], True, cidr_ip))
    fn("isIP", ("kw_is_ip", B, [S], False, is_ip))
    fn("ip.isCanonical", ("kw_ip_is_canonical", B, [S], False, ip_is_canonical))
    fn("family", ("kw_ip_family", N, [OBJ], True, ip_family))
    fn("isUnspecified", ("kw_ip_unspecified", B, [OBJ], True, ip_is_unspecified))
    fn("isLoopback", ("kw_ip_loopback", B, [OBJ], True, ip_is_loopback))
    fn("isLinkLocalMulticast", ("kw_ip_llm", B, [OBJ], True, ip_is_link_local_multicast))
    fn("isLinkLocalUnicast", ("kw_ip_llu", B, [OBJ], True, ip_is_link_local_unicast))
    fn("isGlobalUnicast", ("kw_ip_gu", B, [OBJ], True, ip_is_global_unicast))
    fn("cidr", ("kw_cidr", OBJ, [S], False, cidr))
    fn("isCIDR", ("kw_is_cidr", B, [S], False, is_cidr))
    fn("containsIP", ("kw_cidr_contains_ip", B, [OBJ, T.DYN], True, cidr_contains_ip))
    fn("containsCIDR", ("kw_cidr_contains_cidr", B, [OBJ, T.DYN], True, cidr_contains_cidr))
    fn("masked", ("kw_cidr_masked", OBJ, [OBJ], True, cidr_masked))
    fn("prefixLength", ("kw_cidr_prefix_length", N, [OBJ], True, cidr_prefix_length))
    fn(
        "semver",
        ("kw_semver", OBJ, [S], False, semver),
        ("kw_semver_n", OBJ, [S, B], False, semver),
    )
    fn(
        "isSemver",
        ("kw_is_semver", B, [S], False, is_semver),
        ("kw_is_semver_n", B, [S, B], False, is_semver),
    )
    fn("major", ("kw_semver_major", N, [OBJ], True, semver_major))
    fn("minor", ("kw_semver_minor", N, [OBJ], True, semver_minor))
    fn("patch", ("kw_semver_patch", N, [OBJ], True, semver_patch))
    fn("sets.contains", ("kw_sets_contains", B, [L, L], False, sets_contains))
    fn("sets.equivalent", ("kw_sets_equivalent", B, [L, L], False, sets_equivalent))
    fn("sets.intersects", ("kw_sets_intersects", B, [L, L], False, sets_intersects))
    fn("string", ("kw_to_string", S, [OBJ], False, to_string))
    for name in FORMATS:
        fn(f"format.{name}", (f"kw_format_{name}", OBJ, [], False, _format_factory(name)))
    # optionals cannot cross the Python boundary: <Format>.validate() answers the error
    # list (empty = none) and format.named() a tagged map; hasValue()/value() accept both.
    fn("format.named", ("kw_format_named", OBJ, [S], False, _format_named))
    fn("validate", ("kw_format_validate", T.List(S), [OBJ, S], True, format_validate))
    fn(
        "hasValue",
        ("kw_list_has_value", B, [T.List(S)], True, lambda v: len(v) > 0),
        ("kw_named_has_value", B, [OBJ], True, _named_has_value),
    )
    fn(
        "value",
        ("kw_list_value", T.List(S), [T.List(S)], True, _list_value),
        ("kw_named_value", OBJ, [OBJ], True, _named_value),
    )
    return decls


def _list_value(v: list[str]) -> list[str]:
    if not v:
        raise CelError("optional.none() dereference")
    return list(v)


def _named_has_value(o: Any) -> bool:
    return _library_type(o) == "optional" and o.get("v") is not None


def _named_value(o: Any) -> Any:
    if not _named_has_value(o):
        raise CelError("optional.none() dereference")
    return o["v"]


def _format_factory(name: str) -> Callable[[], dict[str, Any]]:
    def make() -> dict[str, Any]:
        return _tagged("format", v=name)

    return make


def _format_named(name: str) -> Any:
    return _tagged("optional", v=_tagged("format", v=name) if name in FORMATS else None)
