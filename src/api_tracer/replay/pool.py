"""Worker processes that run tasks one at a time and may die doing so:
`WorkerPool` feeds `jobs` of them (forked from a server that imported
torch once), each running `target(conn, *init)`,
and turns what becomes of each task into an event: its result (`Done`),
the worker's death (`Died`: a crashing kernel, an abort, the kernel's OOM
killer) or a task held past the timeout (`TimedOut`: the worker is
killed). A worker lost either way is replaced, and the run goes on.
replay --isolate and api-tracer fuzz run on it.

A worker's side of the protocol: it receives a task (None: stop), says
`started(conn, note)` as it begins each step of the task (the timeout
counts from the latest, and the note says which step a death or a timeout
came in), and sends `("done", result)`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, Iterator, Optional, Tuple

STARTED = "started"  # what a worker says as it begins a step of its task
DONE = "done"


def started(conn: Any, note: str = "") -> None:
    """Said by a worker as it begins (a step of) its task."""
    conn.send((STARTED, note))


def done(conn: Any, result: Any) -> None:
    conn.send((DONE, result))


# How long a worker waits for its next task before it ends (a pool kept between runs, WorkerPool.run's
# keep, in a process that may never run another: replay --ray's, in a Ray worker that outlives the run).
IDLE_EXIT = 300.0


def tasks(conn: Any) -> Iterator[Any]:
    """The tasks a worker receives, until told to stop, or IDLE_EXIT
    seconds pass without one."""
    while True:
        if not conn.poll(IDLE_EXIT):
            return
        task = conn.recv()
        if task is None:
            return
        yield task


@dataclass
class Done:
    result: Any


@dataclass
class Died:
    exitcode: Optional[int]  # -N: killed by signal N
    note: str  # the step it was in


@dataclass
class TimedOut:
    seconds: float
    note: str
    why: str = ""  # how it was held past its timeout, where the CPU clock tells (cpu_clock)


@dataclass
class _Worker:
    process: Any
    key: Optional[Hashable] = None  # the task it holds
    since: Optional[float] = None  # when it began its current step (None: it has not said yet)
    note: str = ""
    timeout: Optional[float] = None  # its task's, a step
    cpu: Optional[float] = None  # the CPU seconds it had used when its step began (cpu_clock)


# The CPU clock (WorkerPool's cpu_clock): a step that works is held to its timeout in CPU seconds, so that a
# loaded machine, which gives each worker less of a CPU, makes no slow step a hang; a step that uses less
# than BLOCKED_SHARE of a CPU over its timeout in wall seconds waits on nothing that comes (a sleep, a lock
# taken twice) and is hung. Measured on 2 CPUs: a blocked worker uses 0.000-0.002 of a CPU, a working one
# at least 0.11 with 8 workers a CPU... 4 a CPU at most (fuzz --jobs) and a load of 17. A step is held at
# most its timeout / MIN_SHARE in wall seconds whatever its clock says (a worker stopped, say).
BLOCKED_SHARE = 0.02
MIN_SHARE = 0.05


def cpu_seconds(pid: int) -> Optional[float]:
    """The CPU seconds (user and system, all threads) process `pid` has
    used, from /proc (None where there is none: not Linux, or gone)."""
    import os

    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # (utime, stime: fields 14, 15)


def _start_server_deaf_to_interrupts() -> None:
    """The fork server started (if it is not yet) with SIGINT ignored, which
    it and the workers it forks keep: a terminal's Ctrl-C reaches the whole
    process group, and a server it killed while workers were starting left
    the run a traceback (EOFError) instead of the stop the caller makes of
    it (this process's handler, or its KeyboardInterrupt, then close())."""
    import signal
    import threading
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


class WorkerPool:
    """`jobs` spawned workers running `target(conn, *init)`, each task
    limited to `timeout` seconds a step (None: no limit); `preload`, the
    modules the server they fork from imports (ReplayFramework.preload).
    With `cpu_clock` a step's timeout counts the CPU seconds its worker
    uses, and a worker blocked a timeout long is timed out (BLOCKED_SHARE);
    where /proc cannot tell, wall seconds."""

    def __init__(
        self,
        target: Callable[..., None],
        init: Tuple[Any, ...],
        jobs: int,
        timeout: Optional[float],
        preload: Tuple[str, ...] = ("torch",),
        cpu_clock: bool = False,
    ) -> None:
        import multiprocessing as mp

        # Workers fork from a server process that has imported torch and the target's module once (and
        # started no thread): a worker lost to a crash is replaced in milliseconds, not in an import of torch.
        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload([*preload, target.__module__])
        _start_server_deaf_to_interrupts()
        self.target, self.init, self.jobs, self.timeout = target, init, max(1, jobs), timeout
        self.cpu_clock = cpu_clock
        self.workers: Dict[Any, _Worker] = {}  # conn -> its worker
        self.idle: Dict[Any, _Worker] = {}  # conn -> a worker kept between runs (run's keep), holding no task
        self.keep = False

    def run(
        self,
        feed: Callable[[], Optional[Tuple[Any, ...]]],
        on_event: Callable[[Hashable, Any], None],
        stop: Callable[[], bool] = lambda: False,
        tick: Optional[Callable[[], None]] = None,
        keep: bool = False,
    ) -> None:
        """Runs tasks until `feed` (called whenever a worker is free) gives
        None and no worker holds one, or `stop()` says so; `on_event(key,
        Done | Died | TimedOut)` for each task; `tick` about every second.
        A task is (key, payload), or (key, payload, timeout) to have a
        timeout of its own. With `keep`, the workers left at the end are
        kept, idle, for the next run (a worker's first call pays torch's
        lazy start-up: replay --ray runs many batches on one pool)."""
        import multiprocessing.connection as connection

        self.keep = keep
        try:
            for conn, w in list(self.idle.items()):
                del self.idle[conn]
                if not w.process.is_alive():
                    w.process.join()
                    conn.close()
                    continue
                task = feed()
                if task is None:
                    self.idle[conn] = w
                    break
                self.workers[conn] = w
                try:
                    self._give(conn, task)
                except OSError:  # (it died since: idle past IDLE_EXIT, or killed) the task to a new one
                    del self.workers[conn]
                    w.process.join()
                    conn.close()
                    self._give(self._start(), task)
            while len(self.workers) + len(self.idle) < self.jobs:
                task = feed()
                if task is None:
                    break
                self._give(self._start(), task)
            while self.workers and not stop():
                busy = dict(self.workers)  # (every worker there holds a task)
                ends = [w.since + w.timeout for w in busy.values() if w.since is not None and w.timeout is not None]
                if self.cpu_clock:  # (a step past its timeout's wall seconds may go on: looked at every second)
                    now = time.monotonic()
                    ends = [end if end > now else now + 1.0 for end in ends]
                wait = 1.0 if tick else None
                if ends:
                    left = max(0.0, min(ends) - time.monotonic())
                    wait = left if wait is None else min(wait, left)
                ready = connection.wait(list(busy) + [w.process.sentinel for w in busy.values()], timeout=wait)
                for conn, w in busy.items():
                    self._poll(conn, w, ready, feed, on_event)
                if tick:
                    tick()
        finally:
            self.close()

    def _poll(self, conn: Any, w: _Worker, ready: list, feed: Callable, on_event: Callable) -> None:
        if conn in ready:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            if message is not None and message[0] == STARTED:
                w.since, w.note = time.monotonic(), message[1]
                w.cpu = cpu_seconds(w.process.pid) if self.cpu_clock else None
                return
            if message is not None:
                key, w.key = w.key, None
                on_event(key, Done(message[1]))
                self._assign(conn, feed)
                return
        if w.process.sentinel in ready or conn in ready:
            w.process.join()
            self._replace(conn, w, Died(w.process.exitcode, w.note), feed, on_event)
        elif w.timeout is not None and w.since is not None:
            why = self._held(w)
            if why is not None:
                w.process.kill()
                w.process.join()
                self._replace(conn, w, TimedOut(w.timeout, w.note, why), feed, on_event)

    def _held(self, w: _Worker) -> Optional[str]:
        """Why worker `w`'s step is past its timeout ("" on the wall
        clock), or None where it is not."""
        wall = time.monotonic() - w.since
        if wall < w.timeout:
            return None
        now = cpu_seconds(w.process.pid) if w.cpu is not None else None
        if now is None:
            return ""
        used = now - w.cpu
        if used >= w.timeout:
            return f"busy: {used:.1f} CPU seconds"
        if used < BLOCKED_SHARE * wall:
            return f"blocked: {used:.2f} CPU seconds in {wall:.0f} s"
        if wall >= w.timeout / MIN_SHARE:
            return f"{used:.1f} CPU seconds in {wall:.0f} s"
        return None

    def _start(self) -> Any:
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=self.target, args=(child, *self.init), daemon=True)
        p.start()
        child.close()
        self.workers[parent] = _Worker(p)
        return parent

    def _assign(self, conn: Any, feed: Callable) -> None:
        """Gives the worker on `conn` the next task; stops it if there is none."""
        task = feed()
        if task is not None:
            self._give(conn, task)
            return
        w = self.workers.pop(conn)
        if self.keep:
            self.idle[conn] = w
            return
        try:
            conn.send(None)
        except OSError:
            pass
        w.process.join(timeout=5)
        if w.process.is_alive():
            w.process.kill()
            w.process.join()
        conn.close()

    def _give(self, conn: Any, task: Tuple[Any, ...]) -> None:
        w = self.workers[conn]
        w.key, w.since, w.note = task[0], None, ""
        w.timeout = task[2] if len(task) > 2 else self.timeout
        conn.send(task[1])

    def _replace(self, conn: Any, w: _Worker, event: Any, feed: Callable, on_event: Callable) -> None:
        key = w.key
        del self.workers[conn]
        conn.close()
        on_event(key, event)
        task = feed()
        if task is not None:
            self._give(self._start(), task)

    def close(self, idle: bool = False) -> None:
        """Stops every worker still there (stop() said so): killed; the
        idle ones too, with `idle`."""
        for conn, w in list(self.workers.items()) + (list(self.idle.items()) if idle else []):
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            conn.close()
        self.workers.clear()
        if idle:
            self.idle.clear()
