"""Nothing under examples/ is named like a module Python could import instead.

examples/README.md has users work from the examples/ directory, where Python puts the
current directory first on ``sys.path``: an example package named like a standard-library
module (``platform``, ``types``, ``json``...) or like an installed package replaces it for
every import in that process, and unrelated libraries then fail in confusing ways (orjson
importing ``platform`` got the example). Every directory and module under examples/, at any
depth, must be a name the standard library does not use; the top-level ones (what
``python`` started from examples/ can shadow) must also not be importable from the
environment.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def module_names(root: Path) -> list[Path]:
    """Every directory and ``.py`` module under ``root`` (caches left out), sorted."""
    found = [
        p
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and (p.is_dir() or p.suffix == ".py")
    ]
    return sorted(found)


def import_name(path: Path) -> str:
    """The name ``path`` is imported as when its parent directory is on ``sys.path``."""
    return path.stem if path.suffix == ".py" else path.name


def shadowed_stdlib(root: Path) -> list[str]:
    """The paths under ``root`` (relative) whose import name a standard-library module has."""
    return [
        str(p.relative_to(root))
        for p in module_names(root)
        if import_name(p) in sys.stdlib_module_names and import_name(p) != "__init__"
    ]


def shadowed_installed(root: Path) -> list[str]:
    """The top-level entries of ``root`` whose import name the environment (``sys.path``
    without the current directory, the repository's root and ``root``) also resolves: what
    ``python`` run from ``root`` would hide."""
    own = {REPO.resolve(), root.resolve()}
    outside = [entry for entry in sys.path if entry and Path(entry).resolve() not in own]
    clashes = []
    for p in module_names(root):
        if p.parent != root:
            continue
        spec = importlib.machinery.PathFinder.find_spec(import_name(p), outside)
        if spec is not None:
            clashes.append(p.name)
    return clashes


def test_examples_exist() -> None:
    names = [import_name(p) for p in module_names(EXAMPLES) if p.parent == EXAMPLES]
    assert "platform_demo" in names and "database_operator" in names


def test_no_example_is_named_like_a_stdlib_module() -> None:
    assert shadowed_stdlib(EXAMPLES) == []


def test_no_top_level_example_is_named_like_an_installed_package() -> None:
    assert shadowed_installed(EXAMPLES) == []


@pytest.mark.parametrize(
    ("name", "clash"),
    [
        ("platform", True),  # the package examples/ had until it was renamed
        ("types.py", True),
        ("json", True),
        ("yaml", False),  # not stdlib (the installed-package check catches it)
        ("platform_demo", False),
    ],
)
def test_the_stdlib_check_sees_a_clash(tmp_path: Path, name: str, clash: bool) -> None:
    target = tmp_path / "nested" / name
    if name.endswith(".py"):
        target.parent.mkdir(parents=True)
        target.write_text("")
    else:
        target.mkdir(parents=True)
    assert bool(shadowed_stdlib(tmp_path)) is clash


@pytest.mark.parametrize(("name", "clash"), [("yaml", True), ("orjson", True), ("demo_x", False)])
def test_the_installed_check_sees_a_clash(tmp_path: Path, name: str, clash: bool) -> None:
    (tmp_path / name).mkdir()
    assert bool(shadowed_installed(tmp_path)) is clash
