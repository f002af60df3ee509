"""The pool's CPU clock (replay/pool.py, fuzz's workers): a slow step on a
loaded machine is not a hang, a step blocked on nothing or spinning for
ever is. Two workers a CPU share this machine's CPUs (4 on CI's 2): each step of
1 CPU second then takes about 2 s or more of wall time, past a wall
timeout of 1.5 s, within a CPU one."""

import os

import pool_tasks

from api_tracer.replay import pool


def run(tasks, cpu_clock, jobs=4, timeout=1.5):
    events = {}
    queue = list(enumerate(tasks))
    workers = pool.WorkerPool(pool_tasks.work, (), jobs, timeout, ("api_tracer.replay.pool",), cpu_clock=cpu_clock)
    workers.run(lambda: queue.pop(0) if queue else None, lambda key, event: events.__setitem__(key, event))
    return [events[i] for i in range(len(tasks))]


def test_slow_steps_on_a_loaded_machine_finish_and_blocked_or_spinning_ones_time_out():
    jobs = max(4, 2 * len(os.sched_getaffinity(0)))  # (at least two workers a CPU: each gets half of one or less)
    busy = [("busy", 1.0)] * jobs
    got = run(busy, cpu_clock=True, jobs=jobs)
    assert all(isinstance(e, pool.Done) for e in got), got
    # the same steps on the wall clock: timed out, as fuzz called them hangs
    walled = run(busy, cpu_clock=False, jobs=jobs)
    assert any(isinstance(e, pool.TimedOut) for e in walled), walled
    sleep, spin = run([("sleep", 0), ("spin", 0)], cpu_clock=True)
    assert isinstance(sleep, pool.TimedOut) and sleep.why.startswith("blocked"), sleep
    assert isinstance(spin, pool.TimedOut) and spin.why.startswith("busy"), spin
