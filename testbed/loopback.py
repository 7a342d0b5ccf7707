"""What every fake server in the test bed shares: an HTTP server on a loopback port
(``self._httpd``) served by a daemon thread, started and stopped, or used as a context
manager. ``stop`` sets ``self._stopping`` first, which wakes replies sleeping in a delay."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    _httpd: ThreadingHTTPServer
    _stopping: threading.Event
    _thread: threading.Thread | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
