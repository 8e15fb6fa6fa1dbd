"""A web server for tests of remote reads: serves one folder on 127.0.0.1 from a thread of the test
process (aiohttp), with byte ranges as any static file server answers them, or ignoring Range like a
server that does not support it; optionally adds latency to every request, and counts requests."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from aiohttp import web


class WebServer:
    """Serves ``root`` at ``url`` until ``stop()`` (or the end of a ``with`` block)."""

    def __init__(self, root: Path, *, latency: float = 0.0, ranges: bool = True, wrong_ranges: bool = False) -> None:
        self.root = root.resolve()
        self.latency = latency
        self.ranges = ranges
        self.wrong_ranges = wrong_ranges  # answer every range with as many bytes from the file's start, said so
        self.requests: list[tuple[str, str, str]] = []  # method, path, Range header
        self.in_flight = 0
        self.most_in_flight = 0  # the most requests answered at once
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._runner: web.AppRunner | None = None
        self.url = ""

    def __enter__(self) -> WebServer:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the test web server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path, request.headers.get("Range", "")))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        target = (self.root / request.path.lstrip("/")).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            raise web.HTTPNotFound()
        if self.wrong_ranges and request.http_range.start is not None:
            data = target.read_bytes()
            n = min(len(data), (request.http_range.stop or len(data)) - request.http_range.start)
            return web.Response(status=206, body=data[:n], headers={"Content-Range": f"bytes 0-{n - 1}/{len(data)}"})
        if self.ranges:
            return web.FileResponse(target)
        return web.Response(body=target.read_bytes(), content_type="application/octet-stream")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)  # HEAD too
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)  # clients may keep connections open
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        self._started.set()
        self._loop.run_forever()
