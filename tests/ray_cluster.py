"""A local Ray cluster on loopback with a bounded lifetime, for tests and benchmarks (a helper module).

The cluster lives in a child process of its own (so Ray's globals and signal handlers stay out of the
caller): it starts with `ray.init`, prints the address, and shuts down when its standard input closes or
after `max_seconds`. Its worker processes inherit the environment given here (loopback server URLs and keys),
as the nodes of a real cluster inherit the environment of `ray start`. One node: Ray announces it under the
machine's own address (it never announces loopback) and, from Ray 2.5x, requires its token
(~/.ray/auth_token) from every client: run the clients with `CLIENT_ENV`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import IO

_HOLDER = r"""
import sys, threading, ray
num_cpus, max_seconds = int(sys.argv[1]), float(sys.argv[2])
ctx = ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
print(ctx.address_info["gcs_address"], flush=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
done.wait(max_seconds)
ray.shutdown()
"""


# What a client (`trustmh run --engine ray --ray-address …`) needs in its environment to join the cluster.
CLIENT_ENV = {"RAY_AUTH_MODE": "token"}


class RayCluster:
    """`with RayCluster(env, num_cpus=2) as address:` a local cluster; `address` is host:port for
    `--ray-address`. Raises RuntimeError (with Ray's own output) when Ray cannot start here."""

    def __init__(self, env: Mapping[str, str] | None = None, *, num_cpus: int = 2, max_seconds: float = 600,
                 start_timeout: float = 180) -> None:
        self.env = {**os.environ, **(env or {}), **CLIENT_ENV}
        self.num_cpus = num_cpus
        self.max_seconds = max_seconds
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> str:
        import selectors
        import tempfile

        # a file, not a pipe: Ray's messages must never block the holder
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(self.num_cpus), str(self.max_seconds)],
                                     env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True)
        stdout: IO[str] = self.proc.stdout  # type: ignore[assignment]
        sel = selectors.DefaultSelector()
        sel.register(stdout, selectors.EVENT_READ)
        ready = sel.select(self.start_timeout)
        line = stdout.readline().strip() if ready else ""
        if ":" not in line:
            self.stderr.seek(0)
            err = self.stderr.read()[-2000:]
            self.__exit__()
            raise RuntimeError(f"Ray did not start: {err.strip() or 'no output'}")
        return line

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        self.stderr.close()
        if proc.poll() is not None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()  # the holder shuts its cluster down and exits
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()  # its Ray processes share its fate
            proc.wait()
