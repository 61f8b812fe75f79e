"""The open-file limit lift shared by the API server and the controller manager: which soft
limits it tries (hard first, macOS's OPEN_MAX as the fallback), and what it does to the
process (in-process: the soft limit is lowered, lifted, and put back)."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core import openfiles
from kubewerk.core.openfiles import OPEN_MAX, raise_open_file_limit, soft_limit_candidates

INF = -1  # RLIM_INFINITY on Linux and macOS as Python's resource module reports it


@pytest.mark.parametrize(
    ("soft", "hard", "candidates"),
    [
        (1024, 4096, [4096]),  # the common case: up to the hard limit
        (1024, OPEN_MAX, [OPEN_MAX]),
        (1024, 524288, [524288, OPEN_MAX]),  # macOS may refuse a high hard limit as soft
        (1024, INF, [INF, OPEN_MAX]),  # an unlimited hard limit: try it, then OPEN_MAX
        (4096, 4096, []),  # already at the top
        (INF, INF, []),
        (INF, 4096, []),  # an unlimited soft limit is never lowered
        (20000, INF, [INF]),  # OPEN_MAX would lower it: left out
        (OPEN_MAX, 524288, [524288]),
        (256, 256, []),
    ],
)
def test_the_soft_limits_tried(soft: int, hard: int, candidates: list[int]) -> None:
    assert soft_limit_candidates(soft, hard, INF) == candidates


class FakeResource:
    """``resource`` as a kernel that refuses soft limits above ``ceiling`` (macOS)."""

    RLIMIT_NOFILE = 7
    RLIM_INFINITY = INF

    def __init__(self, soft: int, hard: int, ceiling: int | None = None) -> None:
        self.limits = (soft, hard)
        self.ceiling = ceiling
        self.tried: list[tuple[int, int]] = []

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == self.RLIMIT_NOFILE
        return self.limits

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        assert which == self.RLIMIT_NOFILE
        self.tried.append(limits)
        soft = limits[0]
        if self.ceiling is not None and (soft == INF or soft > self.ceiling):
            raise ValueError("not allowed to raise maximum limit")
        self.limits = limits


def with_fake(monkeypatch: pytest.MonkeyPatch, fake: Any) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "resource", fake)


def test_a_refused_hard_limit_falls_back_to_open_max(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResource(256, INF, ceiling=24576)
    with_fake(monkeypatch, fake)
    assert raise_open_file_limit() == (OPEN_MAX, INF)
    assert fake.tried == [(INF, INF), (OPEN_MAX, INF)]


def test_the_hard_limit_is_kept_and_never_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResource(1024, 65536)
    with_fake(monkeypatch, fake)
    assert raise_open_file_limit() == (65536, 65536)
    assert fake.tried == [(65536, 65536)]


def test_every_refusal_leaves_the_limit_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResource(256, INF, ceiling=300)
    with_fake(monkeypatch, fake)
    assert raise_open_file_limit() == (256, INF)
    assert fake.tried == [(INF, INF), (OPEN_MAX, INF)]


def test_nothing_is_set_at_the_top(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeResource(4096, 4096)
    with_fake(monkeypatch, fake)
    assert raise_open_file_limit() == (4096, 4096)
    assert fake.tried == []


def test_the_process_limit_is_lifted() -> None:
    """The real ``resource`` module: a lowered soft limit comes back up to the hard one."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = max(512, soft // 2)
    if hard == resource.RLIM_INFINITY or hard <= lowered:
        pytest.skip("the hard descriptor limit leaves nothing to lift")
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        assert openfiles.raise_open_file_limit() == (hard, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
