"""A local Ray cluster on loopback with a bounded lifetime, for tests and benchmarks (a helper module).

The cluster lives in a child process of its own (so Ray's globals and signal handlers stay out of the
caller): it starts with `ray.init`, prints the address, and shuts down when its standard input closes or
after `max_seconds`. Its worker processes inherit the environment given here (loopback server URLs and keys),
as the nodes of a real cluster inherit the environment of `ray start`. From Ray 2.5x a cluster requires its
token (~/.ray/auth_token) from every client: run the clients with `CLIENT_ENV`.

Ray announces a node under the machine's own address whenever the machine has one besides loopback, and
probes a public resolver to find it. Tests and benchmarks must keep their traffic on loopback, so whatever
starts a cluster runs in a network namespace of its own whose only interface is `lo` (`netns_command`):
there Ray can only use 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
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


# Set in the environment of a command started by `netns_command`: it must never start another.
IN_NETNS = "TRUSTMH_LOOPBACK_NETNS"


def loopback_only() -> bool:
    """Whether this process's network namespace has no interface but loopback (/proc/net/dev is per
    namespace; /sys/class/net is not, unless sysfs is mounted again)."""
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return {line.split(":", 1)[0].strip() for line in lines} <= {"lo"}


def netns_command(command: Sequence[str]) -> list[str]:
    """`command` in a new network namespace with only the loopback interface, brought up."""
    return ["unshare", "--net", "env", f"{IN_NETNS}=1", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
            *command]


def netns_unavailable() -> str | None:
    """Why a loopback-only network namespace cannot be made here (None: it can)."""
    if not sys.platform.startswith("linux") or not shutil.which("unshare") or not shutil.which("ip"):
        return "needs Linux with unshare and ip (iproute2)"
    probe = subprocess.run(netns_command(["true"]), capture_output=True, text=True, timeout=30)
    if probe.returncode:
        return f"cannot create a network namespace here ({probe.stderr.strip()[-200:] or probe.returncode})"
    return None


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
