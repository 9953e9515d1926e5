"""Helpers of the server tests: the app on a real loopback port in a thread of
its own, and one JSON call to it."""

import asyncio
import concurrent.futures
import json
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager

from aiohttp import web

from bestemshe_dist.serve.app import create_app


@contextmanager
def running(tb, **kwargs):
    """The app on a free loopback port, served by an event loop of its own thread
    (set up there too: Playwright's sync API holds a loop in the test's thread)."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(create_app(tb, **kwargs), access_log=None)
    ready = concurrent.futures.Future()

    def serve():
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            ready.set_result(site._server.sockets[0].getsockname()[1])
        except BaseException as exc:  # handed to the test's thread
            ready.set_exception(exc)
            return
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = ready.result(30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def call(url, body=None, raw=None):
    """(status, JSON body) of a GET, or of a POST with `body` as JSON (or `raw` bytes)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
