"""The server's controller loop ends when cancelled, whatever it was waiting for: a
cancellation that arrives in the same turn as new work must not be lost (Python 3.11's
``asyncio.wait_for`` loses it, and the loop then ran forever — a hang at shutdown)."""

from __future__ import annotations

import asyncio

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store


async def test_cancelled_as_work_arrives_the_loop_ends() -> None:
    app = ApiServer(open_store("memory"))
    controllers = app.controllers
    for _ in range(20):
        controllers.start()
        task = controllers._task
        assert task is not None
        await asyncio.sleep(0)  # the loop now waits for work (documents not built yet)
        controllers._enqueue("namespace", "/registry/core/namespaces/none")
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2)
        assert done == {task} and task.cancelled()
