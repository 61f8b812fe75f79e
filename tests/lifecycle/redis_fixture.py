"""A real Redis server for the Redis Streams bus tests (never a mock).

``redis_server`` (session) starts ``redis-server`` on a free loopback port with a private
temporary directory and no persistence, and stops it at the end. The binary is Debian's
``redis-server``, which ``scripts/bootstrap.sh`` installs when it is missing and the
script runs as root (as CI does); elsewhere the tests are skipped with that reason.
``redis_url`` (per test) empties the database first and hands out the server's URL.

Import both fixtures into a test module: ``from tests.lifecycle.redis_fixture import
redis_server, redis_url``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

redis = pytest.importorskip(
    "redis", reason="the 'redis' extra is not installed (pip install -e '.[dev]')"
)

START_TIMEOUT = 10.0


@dataclass(frozen=True)
class RedisServer:
    """A running ``redis-server``: where it listens and its process."""

    port: int
    url: str
    process: subprocess.Popen[bytes]
    directory: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(directory: Path) -> RedisServer:
    """Start ``redis-server`` in ``directory`` on a free loopback port and wait until it
    answers PING; skips the test when the binary is missing, fails when it does not come
    up (its log is in the failure message)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip(
            "redis-server is not installed: scripts/bootstrap.sh installs Debian's "
            "redis-server when it runs as root (apt-get install redis-server)"
        )
    log = directory / "redis.log"
    for _ in range(3):  # another process may take the free port before redis binds it
        port = _free_port()
        process = subprocess.Popen(
            [
                binary,
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(directory),
                "--logfile", str(log),
                "--daemonize", "no",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if _answers_ping(port):
                return RedisServer(port, f"redis://127.0.0.1:{port}/0", process, directory)
            time.sleep(0.02)
        stop_redis(process)
    text = log.read_text(errors="replace") if log.exists() else "(no log)"
    pytest.fail(f"redis-server did not start; its log:\n{text}")


def stop_redis(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server (SIGTERM, then SIGKILL after 5 s) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        stop_redis(server.process)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url
