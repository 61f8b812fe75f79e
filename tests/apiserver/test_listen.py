"""Where the embedded server listens and what it hands to clients: loopback unless told
otherwise (then a warning on every start), never a wildcard address in a URL or kubeconfig,
and a kubeconfig no one else can read, not even for an instant."""

from __future__ import annotations

import io
import logging
import os
import socket
import stat
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver import listen
from kubewerk.apiserver.server import EmbeddedServer


@pytest.fixture
def umask_zero() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


# -- binding ------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.7", "[2001:db8::1]"])
def test_a_non_loopback_host_is_refused_before_anything_is_opened(
    host: str, tmp_path: Path
) -> None:
    db = tmp_path / "never.db"
    with pytest.raises(ValueError) as err:
        EmbeddedServer(f"sqlite:{db}", host=host)
    message = str(err.value)
    assert "is not a loopback address" in message
    assert "no authentication" in message
    assert "insecure_bind_non_loopback=True" in message
    assert not db.exists()


def test_a_name_resolving_to_a_non_loopback_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = socket.getaddrinfo

    def fake(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "devbox.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 0))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(
        ValueError,
        match=r"devbox\.example is not a loopback address \(it resolves to 10\.1\.2\.3\)",
    ):
        EmbeddedServer(host="devbox.example")
    srv = EmbeddedServer(
        host="devbox.example", insecure_bind_non_loopback=True, allowed_hosts=["other.example"]
    )
    # a specific address: the server answers requests naming it (and the name it was given as)
    assert srv.allowed_hosts == ("other.example", "10.1.2.3", "devbox.example")
    assert srv.url.startswith("http://devbox.example:")


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "::ffff:127.0.0.1"]
)
def test_loopback_hosts_need_no_opt_in(host: str) -> None:
    bind = listen.resolve(host)
    assert bind.is_loopback
    listen.check_bind(bind, allowed=False, opt_in="x")


def test_an_unresolvable_host_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="does not resolve"):
        EmbeddedServer(host="no-such-host.invalid")


def test_bound_to_0000_the_url_and_kubeconfig_use_127001_and_every_start_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kubewerk.apiserver.server")
    srv = EmbeddedServer(
        host="0.0.0.0", insecure_bind_non_loopback=True, allowed_hosts=["dev.example"]
    )
    assert srv.allowed_hosts == ("dev.example",)  # a wildcard names no address of its own
    with srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        with urllib.request.urlopen(srv.url + "/version", timeout=5) as resp:
            assert resp.status == 200
        path = srv.write_kubeconfig(tmp_path / "kc")
        assert yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"] == srv.url
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        f"listens on 0.0.0.0:{srv.port}" in w and "NO authentication" in w for w in warnings
    ), warnings


def test_a_loopback_server_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kubewerk.apiserver.server")
    with EmbeddedServer():
        pass
    assert not [r for r in caplog.records if "NO authentication" in r.getMessage()]


@pytest.mark.skipif(not ipv6_loopback_available(), reason="no IPv6 loopback")
def test_bound_to_the_ipv6_wildcard_the_url_uses_ipv6_loopback() -> None:
    with EmbeddedServer(host="::", insecure_bind_non_loopback=True) as srv:
        assert srv.url == f"http://[::1]:{srv.port}"
        with urllib.request.urlopen(srv.url + "/version", timeout=5) as resp:
            assert resp.status == 200


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_header_bytes", 0),
        ("read_header_timeout", 0),
        ("idle_timeout", float("nan")),
        ("request_body_timeout", float("inf")),
        ("max_connections", 0),
        ("idle_timeout", -1),
    ],
)
def test_bad_limits_are_value_errors(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        EmbeddedServer(**{name: value})


# -- the kubeconfig ----------------------------------------------------------------------------


def test_the_kubeconfig_is_0600_and_new_directories_0700(tmp_path: Path, umask_zero: None) -> None:
    target = tmp_path / "a" / "b" / "kubeconfig"
    EmbeddedServer().write_kubeconfig(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["kubeconfig"]  # no temporary file left


def test_an_existing_world_readable_kubeconfig_is_replaced_by_a_private_one(tmp_path: Path) -> None:
    target = tmp_path / "kubeconfig"
    target.write_text("old")
    target.chmod(0o644)
    EmbeddedServer().write_kubeconfig(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert yaml.safe_load(target.read_text())["current-context"] == "kubewerk"


def test_the_kubeconfig_is_never_readable_by_others_even_while_it_is_written(
    tmp_path: Path, umask_zero: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file opened for writing in the kubeconfig's directory is private the moment it
    exists (with umask 0, a file created with the default mode would be 0666 until a chmod)."""
    seen: list[tuple[str, int]] = []

    def record(path: Any) -> None:
        p = Path(os.fsdecode(path))
        if p.parent == tmp_path and p.exists():
            seen.append((p.name, stat.S_IMODE(p.stat().st_mode)))

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def opened(path: Any, *args: Any, **kwargs: Any) -> Any:
            result = real(path, *args, **kwargs)
            if isinstance(path, str | bytes | os.PathLike):
                record(path)
            return result

        return opened

    monkeypatch.setattr(os, "open", spy(os.open))
    monkeypatch.setattr(io, "open", spy(io.open))
    EmbeddedServer().write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.undo()
    assert seen, "the spy saw no file opened"
    assert all(mode & 0o077 == 0 for _, mode in seen), seen


# -- Host names answered ---------------------------------------------------------------------


def get_status(url: str, host: str) -> int:
    req = urllib.request.Request(url + "/version", headers={"Host": host})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_allowed_hosts_reach_the_host_check() -> None:
    with EmbeddedServer(
        host="0.0.0.0", insecure_bind_non_loopback=True, allowed_hosts=["dev.example"]
    ) as srv:
        assert get_status(srv.url, f"dev.example:{srv.port}") == 200
        assert get_status(srv.url, f"localhost:{srv.port}") == 200
        assert get_status(srv.url, f"evil.example:{srv.port}") == 403


def local_non_loopback_address() -> str | None:
    """An IPv4 address of this machine other than loopback that a socket can bind, if any."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent; this only picks a route
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    if address.startswith("127.") or address == "0.0.0.0":
        return None
    return address


@pytest.mark.skipif(local_non_loopback_address() is None, reason="no non-loopback address")
def test_bound_to_a_specific_address_requests_naming_it_are_answered() -> None:
    address = local_non_loopback_address()
    assert address is not None
    with EmbeddedServer(host=address, insecure_bind_non_loopback=True) as srv:
        assert srv.url == f"http://{address}:{srv.port}"
        assert get_status(srv.url, f"{address}:{srv.port}") == 200
        assert get_status(srv.url, f"evil.example:{srv.port}") == 403
