"""The pytest plugin as users get it: registered by installing kubewerk (the ``pytest11``
entry point), every fixture the README and docs/runtime.md name exists, and without
pytest-asyncio a test asking for a server fixture fails with one line saying what to
install while other tests are unaffected. Each check runs pytest in a subprocess, in
an empty directory, as a user's project would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from kubewerk.testing import plugin

ROOT = Path(__file__).resolve().parents[2]

RUN = "import sys; import pytest; raise SystemExit(pytest.main(sys.argv[1:]))"


def pytest_in(
    directory: Path, *args: str, without_pytest_asyncio: bool = False
) -> subprocess.CompletedProcess[str]:
    """pytest in a fresh interpreter. ``without_pytest_asyncio``: pytest_asyncio cannot be
    imported, as when it is not installed (entry-point plugins are then not autoloaded,
    since pytest would look into the hidden package for them; kubewerk's entry point
    module is named with ``-p`` instead)."""
    code, env = RUN, dict(os.environ)
    if without_pytest_asyncio:
        code = "import sys; sys.modules['pytest_asyncio'] = None; " + RUN
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ("-p", plugin.__name__, *args)
    return subprocess.run(
        [sys.executable, "-c", code, "-p", "no:cacheprovider", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def documented_in_runtime_md() -> set[str]:
    """The fixture names in docs/runtime.md's table under "Testing"."""
    text = (ROOT / "docs" / "runtime.md").read_text()
    section = text.split("## Testing", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {re.match(r"\| `([a-z_]+)", row).group(1) for row in rows}  # type: ignore[union-attr]


def documented_in_readme() -> set[str]:
    """The fixture names in the README's "Test operators without a cluster" paragraph."""
    text = (ROOT / "README.md").read_text()
    paragraph = text.split("**Test** operators without a cluster", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", paragraph))


def test_the_entry_point_names_the_plugin() -> None:
    (ep,) = [ep for ep in entry_points(group="pytest11") if ep.name == "kubewerk"]
    assert ep.value == "kubewerk.testing.plugin"


def test_every_documented_fixture_is_registered(tmp_path: Path) -> None:
    in_docs, in_readme = documented_in_runtime_md(), documented_in_readme()
    assert in_docs == set(plugin.FIXTURES)
    assert in_readme and in_readme <= set(plugin.FIXTURES)
    result = pytest_in(tmp_path, "--fixtures")
    registered = {
        m.group(1)
        for m in re.finditer(
            r"^([a-z_]+)(?: \[.*?\])? -- .*kubewerk[/\\]testing[/\\]", result.stdout, re.M
        )
    }
    assert registered == set(plugin.FIXTURES), result.stdout


def test_without_pytest_asyncio_a_server_fixture_fails_with_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(
        "import asyncio\n\n"
        "def test_plain():\n"
        "    assert True\n\n"
        "def test_server(kube_client):\n"
        "    pass\n\n"
        "def test_waits(wait_for):\n"
        "    assert asyncio.run(wait_for(lambda: 42, timeout=1)) == 42\n"
    )
    result = pytest_in(tmp_path, "-rE", "test_user.py", without_pytest_asyncio=True)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "2 passed, 1 error" in out
    assert (
        "kubewerk's kube_client fixture needs pytest-asyncio, which is not installed: "
        "pip install pytest-asyncio"
    ) in out
    assert "Traceback" not in out and "not found" not in out
