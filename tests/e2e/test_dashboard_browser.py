"""The dashboard in a real browser: Debian's headless chromium driven by selenium
through Debian's chromedriver (nothing downloaded), against ``kubewerk dashboard`` run
as a user runs it, over the embedded API server with a platform scene.

Checked: the pages load without console errors; the stuck object (a Failed
Environment) is first, with its reason; a change made with the real kubectl reaches
the page without a reload within 2 s; a hostile message (``<script>``, ``<img
onerror>``) is shown as text and runs nothing; the object page and the graph render.
Screenshots are saved under the test's tmp directory (``<tmp_path>/screenshots``; the
path is printed) and, when ``KUBEWERK_ARTIFACTS`` is set, copied there.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client

from ..observe.scenario import HOSTILE, build_scene

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
KUBEWERK = (sys.executable, "-m", "kubewerk.cli")
STATUS_PATCH = ("--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Reconciling"}}')


@pytest.fixture
def dashboard(tserver: EmbeddedServer, kubeconfig: Path) -> Iterator[str]:
    """``kubewerk dashboard`` on a free loopback port over a platform scene; its URL."""

    async def scene() -> None:
        async with Client.from_url(tserver.url) as client:
            await build_scene(client)

    asyncio.run(scene())
    proc = subprocess.Popen(
        [*KUBEWERK, "dashboard", "--kubeconfig", str(kubeconfig), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"on (http://\S+/)", line)
        assert found, line
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "no chromium/chromedriver (scripts/bootstrap.sh installs Debian's as root: "
            "apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait(predicate: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except Exception:  # an element not there yet
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout}s: {predicate}")
        time.sleep(0.02)


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_dashboard_in_chromium(
    dashboard: str, browser: Any, kubeconfig: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"screenshots: {shots}")

    def stuck_texts() -> list[str]:
        # read the rows' text in one go: a live update may replace them between a find
        # and a read (a stale element), and then the whole read is simply tried again
        return [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#stuck tbody tr")]

    browser.get(dashboard)
    try:
        rows = wait(stuck_texts)
    except BaseException:
        print(browser.page_source[:3000], console_errors(browser))
        raise
    first = rows[0]
    assert "Environment/acme/prod" in first and "ProvisioningFailed" in first
    # the hostile message is text on the page; nothing of it ran or became an element
    assert HOSTILE in first
    assert browser.execute_script("return window.__pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "#main script, #main img")
    assert "Database/acme/orders" in rows[1]
    browser.save_screenshot(str(shots / "summary.png"))

    # a change with kubectl reaches the page without a reload
    browser.execute_script("window.__sameDocument = true")
    started = time.monotonic()
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    subprocess.run(
        [
            kubectl,
            "patch",
            "environment.platform.kubewerk.dev",
            "prod",
            "-n",
            "acme",
            *STATUS_PATCH,
        ],
        env={
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(kubeconfig.parent / "kube-cache"),
        },
        check=True,
        capture_output=True,
        timeout=30,
    )

    def env_gone() -> bool:
        rows = stuck_texts()
        return bool(rows) and "Environment/acme/prod" not in rows[0]

    wait(env_gone, timeout=5)
    elapsed = time.monotonic() - started
    print(f"kubectl patch -> page updated: {elapsed:.3f} s (kubectl's own start included)")
    assert elapsed < 2.0
    assert browser.execute_script("return window.__sameDocument === true")
    browser.save_screenshot(str(shots / "summary-after-change.png"))

    # one object's page
    browser.get(dashboard + "#/object/" + "Database.platform.kubewerk.dev%2Facme%2Forders")
    wait(lambda: "DependenciesNotReady" in browser.find_element(By.ID, "why").text)
    page = wait(lambda: browser.find_element(By.ID, "main").text)
    assert "Quota/acme/shop (missing)" in page and "(none) → Pending: Created" in page
    browser.save_screenshot(str(shots / "object.png"))

    # the graph of the tenant
    browser.get(dashboard + "#/graph/root/" + "Tenant.platform.kubewerk.dev%2F%2Facme")
    nodes = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#graph svg g.node"))
    assert len(nodes) >= 4
    browser.save_screenshot(str(shots / "graph.png"))

    browser.get(dashboard + "#/metrics")
    wait(lambda: "Controllers" in browser.find_element(By.ID, "main").text)

    assert console_errors(browser) == []
    target = os.environ.get("KUBEWERK_ARTIFACTS")
    if target:
        shutil.copytree(shots, Path(target) / "dashboard-screenshots", dirs_exist_ok=True)
    assert sorted(p.name for p in shots.iterdir()) == [
        "graph.png",
        "object.png",
        "summary-after-change.png",
        "summary.png",
    ]
