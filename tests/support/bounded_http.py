"""The lifecycle every loopback test server shares, and its rule: a stall fails (a helper module, not a test).

A test's fake server states its bounds: `max_requests` (how many calls the test makes), `max_seconds` (how long
the test may use it) and `max_wait` (how long one call may wait on it, on top of the delays the test scripted).
Breaking one is a violation, recorded with the server's name (where it was started), the bound and the request:

* a request beyond `max_requests`, or after `max_seconds` ran out, is answered at once with 410 Gone (no
  client retries a 410: Inspect and the OpenAI SDK retry 408, 429 and 5xx, and a refused connection), so
  the caller fails in milliseconds instead of retrying until its own timeout;
* a request still waiting when `max_seconds` runs out is woken and hung up on;
* a request whose answer took longer than `max_wait` plus its scripted delay is recorded when it ends.

Reaching a bound is not a violation (a test that makes exactly `max_requests` calls is right); calling past it
is. The server's `with` block raises `StallError` on leaving when it recorded one (or adds it as a note to the
exception already leaving), and the `stalls_and_leaks` plugin fails the test during which a server recorded
one that nothing raised yet (a server started without `with`, or owned by a fixture). A test that plants a
violation on purpose takes it with `take_violations()`.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CAP_STATUS = 410
SUPPORT = Path(__file__).resolve().parent
KEPT_PER_SERVER = 5  # a runaway client makes thousands of calls past a cap; the first few say what happened
# a request is timed when its handler returns, just after the client has its answer: how long `take_violations`
# waits for the requests still closing (seen: a 0.3 s call past max_wait=0.1 not yet recorded when taken, in a
# busy fast lane)
SETTLE_S = 2.0


class StallError(AssertionError):
    """A loopback server's bound was broken: a test that calls more or longer than it stated fails."""


@dataclass
class Violation:
    server: str
    text: str
    raised: bool = False  # reported already (by the `with` block or the plugin), so never twice

    def line(self) -> str:
        return f"{self.server}: {self.text}"


_ALL: list[Violation] = []  # every violation of the process, in order (the plugin reads the new ones per test)
_ALL_LOCK = threading.Lock()


def violations_since(index: int) -> list[Violation]:
    with _ALL_LOCK:
        return list(_ALL[index:])


def violation_count() -> int:
    with _ALL_LOCK:
        return len(_ALL)


def _caller() -> str:
    """Where the server was made: the first frame outside tests/support (the test or fixture that owns it)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if Path(frame.filename).resolve().parent != SUPPORT:
            return f"{Path(frame.filename).name}:{frame.lineno}"
    return "?"


class Bounds:
    """One server's bounds and its serving thread. `serve(handler)` starts it on 127.0.0.1; `stop()` ends it
    (idempotent, safe from any thread, a request handler too). `wake` is set when the server stops or its
    `max_seconds` runs out: scripted delays wait on it, so no handler outlives its server's bounds."""

    def __init__(self, kind: str, *, max_requests: int, max_seconds: float, max_wait: float = 10.0) -> None:
        self.kind = kind
        self.where = _caller()
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.max_wait = max_wait
        self.requests = 0  # requests admitted
        self.refused = 0  # requests answered 410 for breaking a bound
        self.wake = threading.Event()
        self.stopped = threading.Event()
        self.expired = False
        self._own: list[Violation] = []
        self._lost = 0  # violations past KEPT_PER_SERVER, counted only
        self._in_flight: dict[int, tuple[str, float]] = {}  # admitted number -> (method path, start)
        self._lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # ---------------------------------------------------------------------------------------- naming
    @property
    def name(self) -> str:
        port = self.httpd.server_address[1] if self.httpd is not None else "-"
        return f"{self.kind} on 127.0.0.1:{port} (started at {self.where})"

    @property
    def port(self) -> int:
        assert self.httpd is not None, "server not started"
        return int(self.httpd.server_address[1])

    # ------------------------------------------------------------------------------------- lifecycle
    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        if self.httpd is not None:
            return
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _bounded(handler, self))
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.max_seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        with self._lock:
            if self.stopped.is_set():
                return
            self.stopped.set()
        self.wake.set()
        if self._timer is not None:
            self._timer.cancel()
        httpd = self.httpd
        if httpd is not None:
            # shutdown() waits for serve_forever() to return: never call it on the serving thread
            if threading.current_thread() is self._thread:
                threading.Thread(target=httpd.shutdown, daemon=True).start()
            else:
                httpd.shutdown()
            httpd.server_close()
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> Bounds:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.leave(exc)

    def leave(self, exc: BaseException | None) -> None:
        """End of the server's `with` block: stop, then raise what it recorded (or note it on `exc`)."""
        self.stop()
        pending = [v for v in self.violations if not v.raised]
        if not pending:
            return
        for v in pending:
            v.raised = True
        message = self._message(pending)
        if exc is None:
            raise StallError(message)
        exc.add_note(message)

    # ------------------------------------------------------------------------------------ violations
    @property
    def violations(self) -> list[Violation]:
        with self._lock:
            return list(self._own)

    def take_violations(self) -> list[str]:
        """The violations so far, as lines, marked as expected (a test that plants one on purpose); the requests
        still in flight are waited for first, at most SETTLE_S, so one already answered has been timed."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            with self._lock:
                if not self._in_flight:
                    break
            time.sleep(0.005)
        taken = self.violations
        for v in taken:
            v.raised = True
        return [v.text for v in taken]

    def _message(self, pending: list[Violation]) -> str:
        lost = f"\n  ... and {self._lost} more" if self._lost else ""
        return (f"{self.name} broke its bounds (max_requests={self.max_requests}, max_seconds="
                f"{self.max_seconds:g}, max_wait={self.max_wait:g}); raise the bound the test states, with a "
                "comment saying what the run really makes, or fix the call that stalls:\n  "
                + "\n  ".join(v.text for v in pending) + lost)

    def _violate(self, text: str) -> None:
        with self._lock:
            if len(self._own) >= KEPT_PER_SERVER:
                self._lost += 1
                return
            violation = Violation(self.name, text)
            self._own.append(violation)
        with _ALL_LOCK:
            _ALL.append(violation)

    def _expire(self) -> None:
        with self._lock:
            if self.stopped.is_set():
                return
            self.expired = True
            waiting = sorted(self._in_flight.items())
        for n, (what, start) in waiting:
            self._violate(f"request {n} ({what}) was still waiting after {time.monotonic() - start:.1f} s "
                          f"when max_seconds={self.max_seconds:g} ran out")
        self.wake.set()  # scripted delays end now: the caller gets a hang-up, not a wait for its timeout

    # -------------------------------------------------------------------------------------- requests
    def admit(self, what: str) -> int | None:
        """Number a request, or None when it breaks a bound (then it is recorded and must be refused)."""
        with self._lock:
            if self.stopped.is_set():
                return None
            n = self.requests + self.refused + 1
            if self.expired:
                reason = f"request {n} ({what}) came after max_seconds={self.max_seconds:g} ran out"
            elif self.requests >= self.max_requests:
                reason = f"request {n} ({what}) came after the cap of max_requests={self.max_requests}"
            else:
                self.requests += 1
                self._in_flight[n] = (what, time.monotonic())
                return n
            self.refused += 1
        self._violate(reason)
        return None

    def done(self, n: int, scripted_wait: float) -> None:
        with self._lock:
            what, start = self._in_flight.pop(n, ("?", time.monotonic()))
        took = time.monotonic() - start
        if took > self.max_wait + scripted_wait and not self.stopped.is_set():
            self._violate(f"request {n} ({what}) took {took:.1f} s, past max_wait={self.max_wait:g} s"
                          + (f" + {scripted_wait:g} s scripted" if scripted_wait else ""))


def _bounded(handler: type[BaseHTTPRequestHandler], bounds: Bounds) -> type[BaseHTTPRequestHandler]:
    """`handler` with the bounds checked on every request, before its `do_*` method runs. A handler adds the
    delays it scripts for a request to `self.scripted_wait`."""

    class Bounded(handler):  # type: ignore[valid-type, misc]
        scripted_wait = 0.0
        bound_number: int | None = None

        def handle_one_request(self) -> None:
            self.bound_number, self.scripted_wait = None, 0.0
            try:
                super().handle_one_request()
            finally:
                if self.bound_number is not None:
                    bounds.done(self.bound_number, self.scripted_wait)

        def parse_request(self) -> bool:
            if not super().parse_request():
                return False
            self.bound_number = bounds.admit(f"{self.command} {self.path}")
            if self.bound_number is not None:
                return True
            self._refuse()
            return False

        def _refuse(self) -> None:
            # read the body first: closing a socket with unread bytes sends a reset, which clients retry
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            message = (f"{bounds.name}: request past the server's bounds (max_requests={bounds.max_requests}, "
                       f"max_seconds={bounds.max_seconds:g}); the test fails")
            data = json.dumps({"error": {"message": message, "type": "loopback_bounds", "code": "loopback_bounds"}}
                              ).encode()
            self.close_connection = True
            try:
                self.send_response(CAP_STATUS)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{handler.__name__}"
    return Bounded
