"""String formats a CRD schema may validate, as kube-openapi's ``strfmt`` registry does.

Kubernetes keeps only the formats in :data:`SUPPORTED` (names compared with dashes
removed); any other ``format`` is ignored, never an error.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import unicodedata
from collections.abc import Callable
from typing import Final

import re2

SUPPORTED: Final = frozenset(
    {
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
    }
)

_UUID = re2.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re2.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re2.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
_UUID5 = re2.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
_DATETIME_TIME = re2.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
)
_DATE = re2.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_SSN = re2.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_HEXCOLOR = re2.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR = re2.compile(r"^rgb\(" + _RGB_PART + "," + _RGB_PART + "," + _RGB_PART + r"\)$")
_BASE64 = re2.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
)
_CREDITCARD = re2.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)"
    r"[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|"
    r"(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$"
)
_DURATION_PART = re2.compile(r"((\d+)\s*([A-Za-zµ]+))")
_GO_DURATION = re2.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$")
_TIME_UNITS: Final = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_EMAIL_LOCAL = re2.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_EMAIL_DOMAIN = re2.compile(
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$"
)
_SCHEME = re2.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def _label_char(c: str) -> bool:
    """``[a-zA-Z0-9\\p{S}\\p{L}]``: an ASCII letter or digit, or any Unicode symbol or letter."""
    return (c.isascii() and c.isalnum()) or unicodedata.category(c)[0] in "LS"


def _tld_char(c: str) -> bool:
    """``[a-zA-Z\\p{L}]``: any Unicode letter (ASCII letters included)."""
    return unicodedata.category(c)[0] == "L"


def _single_label(s: str) -> bool:
    """The pattern's first alternative, ``X(-?X{0,62})?``: one label whose only hyphen, if
    any, follows its first character."""
    if not _label_char(s[0]):
        return False
    rest = s[2:] if s[1:2] == "-" else s[1:]
    return len(rest) <= 62 and all(_label_char(c) for c in rest)


def _dotted_name(s: str) -> bool:
    """The pattern's second alternative, ``(X([X-]{0,61}X)?\\.)+T{2,63}``: labels that begin
    and end with a label character, then a top-level label of letters."""
    *labels, tld = s.split(".")
    if not labels or not 2 <= len(tld) <= 63 or not all(_tld_char(c) for c in tld):
        return False
    for label in labels:
        if not label or len(label) > 63 or not _label_char(label[0]):
            return False
        if len(label) > 1 and not (
            _label_char(label[-1]) and all(c == "-" or _label_char(c) for c in label[1:-1])
        ):
            return False
    return True


def is_hostname(s: str) -> bool:
    """kube-openapi's ``hostname`` format (go-openapi strfmt's hostname pattern, at most 255
    characters, each dot-separated part at most 63).

    The pattern is matched by hand: as an RE2 program it takes ~0.15 s to compile and
    exhausts RE2's DFA memory on first use (RE2 then prints an error to stderr)."""
    if not s or len(s) > 255 or not (_single_label(s) or _dotted_name(s)):
        return False
    return all(len(p) <= 63 for p in s.split("."))


def _parse_ipv4_sloppy(s: str) -> bool:
    parts = s.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p or len(p) > 3 or not p.isascii() or not p.isdigit() or int(p) > 255:
            return False
    return True


def parse_ip_sloppy(s: str) -> bool:
    """``netutils.ParseIPSloppy``: Go's ``net.ParseIP`` that also allows leading zeros."""
    if not s:
        return False
    if ":" not in s:
        return _parse_ipv4_sloppy(s)
    if "%" in s:  # zones are not IPs
        return False
    head, sep, tail = s.rpartition(":")
    if "." in tail:
        if not _parse_ipv4_sloppy(tail):
            return False
        s = head + sep + "0:0"
    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return False
    return True


def is_ipv4(s: str) -> bool:
    return parse_ip_sloppy(s) and "." in s


def is_ipv6(s: str) -> bool:
    return parse_ip_sloppy(s) and ":" in s


def is_cidr(s: str) -> bool:
    addr, sep, bits = s.partition("/")
    if not sep or not bits.isascii() or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        return False
    if not parse_ip_sloppy(addr):
        return False
    limit = 32 if ":" not in addr else 128
    return int(bits) <= limit


def is_mac(s: str) -> bool:
    """``net.ParseMAC``: 6, 8 or 20 octets, ``:``/``-`` separated or dotted quads."""
    if len(s) < 14:
        return False
    if s[2] in ":-":
        sep = s[2]
        if (len(s) + 1) % 3 != 0:
            return False
        n = (len(s) + 1) // 3
        if n not in (6, 8, 20):
            return False
        parts = s.split(sep)
        return len(parts) == n and all(len(p) == 2 and _is_hex(p) for p in parts)
    if s[4] == ".":
        if (len(s) + 1) % 5 != 0:
            return False
        n = 2 * (len(s) + 1) // 5
        if n not in (6, 8, 20):
            return False
        parts = s.split(".")
        return all(len(p) == 4 and _is_hex(p) for p in parts)
    return False


def _is_hex(s: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in s)


def is_date(s: str) -> bool:
    m = _DATE.match(s)
    if not m:
        return False
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not 1 <= month <= 12 or day < 1:
        return False
    dim = [
        31,
        29 if (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)) else 28,
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ]
    return day <= dim[month - 1]


def is_datetime(s: str) -> bool:
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _DATETIME_TIME.search(parts[1])
    if not m:
        return False
    return bool(m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59")


def is_duration(s: str) -> bool:
    if _GO_DURATION.match(s):
        return True
    ok = False
    for match in _DURATION_PART.finditer(s):
        unit = match.group(3).strip().lower()
        for variants in _TIME_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or variant.lower() == unit:
                    ok = True
    return ok


def is_email(s: str) -> bool:
    """An approximation of Go's ``net/mail.ParseAddress`` (``addr`` or ``Name <addr>``)."""
    text = s.strip()
    if text.endswith(">") and "<" in text:
        text = text[text.rindex("<") + 1 : -1]
    local, sep, domain = text.rpartition("@")
    if not sep or not local or not domain:
        return False
    if local.startswith('"') and local.endswith('"') and len(local) >= 2:
        local_ok = True
    else:
        local_ok = bool(_EMAIL_LOCAL.match(local))
    if domain.startswith("[") and domain.endswith("]"):
        return local_ok
    return local_ok and bool(_EMAIL_DOMAIN.match(domain))


def is_request_uri(s: str) -> bool:
    """``url.ParseRequestURI``: an absolute URI or an absolute path, no control bytes."""
    if not s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return False
    if s == "*":
        return True
    m = _SCHEME.match(s)
    if m is None:
        if s[0] == ":":
            return False
        return s.startswith("/")
    rest = s[m.end() :]
    if rest.startswith("//"):
        authority = rest[2:]
        for stop in "/?":
            idx = authority.find(stop)
            if idx >= 0:
                authority = authority[:idx]
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return False
            port = host[end + 1 :]
            return not port or port == ":" or (port.startswith(":") and port[1:].isdigit())
        h, _, port = host.partition(":")
        if port and not port.isdigit():
            return False
        return all(c.isalnum() or c in "-._~!$&'()*+,;=%" for c in h)
    if rest == "":
        return True
    return True


def _isbn10(s: str) -> bool:
    s = s.replace(" ", "").replace("-", "")
    if len(s) != 10 or not s[:9].isdigit() or not (s[9].isdigit() or s[9] == "X"):
        return False
    total = sum((10 - i) * int(c) for i, c in enumerate(s[:9]))
    total += 10 if s[9] == "X" else int(s[9])
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    s = s.replace(" ", "").replace("-", "")
    if len(s) != 13 or not s.isdigit():
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s[:12]))
    return (10 - total % 10) % 10 == int(s[12])


def is_creditcard(s: str) -> bool:
    digits = "".join(c for c in s if c.isascii() and c.isdigit())
    if not _CREDITCARD.match(digits):
        return False
    total = 0
    double = False
    for c in reversed(digits):
        d = int(c)
        if double:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        double = not double
    return total % 10 == 0


def is_bson_objectid(s: str) -> bool:
    if len(s) != 24:
        return False
    try:
        binascii.unhexlify(s)
    except (binascii.Error, ValueError):
        return False
    return True


def is_base64(s: str) -> bool:
    if not _BASE64.match(s):
        return False
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


CHECKERS: Final[dict[str, Callable[[str], bool]]] = {
    "bsonobjectid": is_bson_objectid,
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": is_mac,
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID3.match(s)),
    "uuid4": lambda s: bool(_UUID4.match(s)),
    "uuid5": lambda s: bool(_UUID5.match(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": is_creditcard,
    "ssn": lambda s: len(s) == 11 and bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": is_base64,
    "password": lambda s: True,
    "date": is_date,
    "duration": is_duration,
    "datetime": is_datetime,
}


def checker_for(fmt: str) -> Callable[[str], bool] | None:
    """The checker Kubernetes applies for a schema ``format``, or None if it is ignored."""
    return CHECKERS.get(fmt.replace("-", ""))
