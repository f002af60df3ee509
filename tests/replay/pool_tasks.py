"""Workers for tests/replay/test_pool_clock.py (a module of its own: the
pool's fork server imports the target's module)."""

import time

from api_tracer.replay import pool


def work(conn):
    """Each task (what, seconds): "busy" spins the CPU for that many CPU
    seconds, "sleep" sleeps forever, "spin" spins forever."""
    for what, seconds in pool.tasks(conn):
        pool.started(conn, what)
        if what == "busy":
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass
        elif what == "sleep":
            while True:
                time.sleep(0.01)
        elif what == "spin":
            while True:
                pass
        pool.done(conn, what)
