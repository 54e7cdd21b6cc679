"""The processes of a real cluster: each started by us, each ended by its pid, whatever happens.

A broker, a controller or ZooKeeper is started with ``PR_SET_PDEATHSIG`` set to SIGKILL,
so that if the driver itself is killed (SIGKILL leaves it no chance to clean up) the
kernel ends every process it started. A normal end, an exception or Ctrl-C ends them by
pid (``ProcessSet.close``). Paused processes (SIGSTOP) are killed as they are.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setpgrp()  # Ctrl-C in the driver's terminal reaches the driver alone, which ends them in order


@dataclass
class ProcessSet:
    """The processes one cluster started, by name ("broker-0", "controller", "zookeeper")."""

    running: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> int:
        self.stop(name)
        out = open(log, "ab")
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=_die_with_parent, env=env, close_fds=True)
        finally:
            out.close()
        self.running[name] = proc
        self.logs[name] = log
        return proc.pid

    def pid(self, name: str) -> int | None:
        proc = self.running.get(name)
        return proc.pid if proc is not None and proc.poll() is None else None

    def signal(self, name: str, sig: int) -> None:
        proc = self.running.get(name)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    def stop(self, name: str) -> None:
        """SIGKILL by pid, then reap: the process is gone when this returns."""
        proc = self.running.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a SIGKILLed process always goes
            pass

    def close(self) -> None:
        for name in list(self.running):
            self.stop(name)

    def pids(self) -> list[int]:
        return [p.pid for p in self.running.values() if p.poll() is None]


def wait_until(predicate, timeout: float, interval: float = 0.1):
    """The predicate's first truthy value within ``timeout`` seconds, else its last value."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= end:
            return value
        time.sleep(interval)
