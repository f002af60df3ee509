"""The Paddle dialect's per-call overhead, as ratios measured side by side.

    python bench/bench_paddle.py [--quick]

Each of Paddle's levels, and the three together, over Paddle's default API
list, on two CPU workloads: an op-bound loop of tiny tensors (all overhead,
no compute) and a small CNN's forward, backward and optimizer step. Each
variant runs in a fresh process and takes the thread's CPU time, best of its
rounds, the set repeated interleaved:

  untraced       the workload alone
  floor          Python wrappers, by setattr, over the callables the level
                 patches, that only call through: the API list (levels 0
                 and 1), every builtin of paddle._C_ops (level 2), both
                 ([0,1,2])
  python logger  the same wrappers doing a plain-Python logger's per-call
                 work on the same fields (bench/python_logger.py,
                 PaddleLogger): the outermost API call (level 0), every API
                 call, nested ones too (level 1), every operator call
                 (level 2), or the last two (levels [0,1,2], where api_tracer
                 writes one record for a call levels 0 and 1 both record)
  api_tracer     APITracer(dialect="paddle", levels=LEVEL), writing its files

It prints, per level, the calls an iteration records (api_tracer's from its
api_statistics.yaml, the Python logger's from its own count), the overhead
per call (time minus untraced, over those calls; the floor's over
api_tracer's) and api_tracer's overhead per call over the Python logger's
(the goal: at most 0.2).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading

import paddle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_per_variant, best_time, command_line
from python_logger import PaddleLogger, PaddleOperatorSetattr, PythonSetattr, Together

from api_tracer import APITracer
from api_tracer.frameworks.paddle.dialect import PaddleDialect
from api_tracer.frameworks.paddle.hooks import operators

paddle.set_num_threads(1) if hasattr(paddle, "set_num_threads") else None


def tiny_ops(n):
    x = paddle.ones([4])
    y = paddle.full([4], 2.0)
    for _ in range(n):
        z = paddle.add(x, y)
        z = z * 2.0
        z = paddle.nn.functional.relu(z - 1.0)
        paddle.sum(z)


class SmallCNN(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 8, 3, padding=1)
        self.fc = paddle.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = paddle.nn.functional.relu(self.conv(x))
        return self.fc(paddle.flatten(x, 1))


def cnn(n):
    paddle.seed(0)
    model = SmallCNN()
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    x = paddle.randn([4, 3, 8, 8])
    label = paddle.to_tensor([1, 2, 3, 4])
    for _ in range(n):
        loss = paddle.nn.functional.cross_entropy(model(x), label)
        loss.backward()
        opt.step()
        opt.clear_grad()


WORKLOADS = {"tiny": tiny_ops, "cnn": cnn}
# The levels measured, by label, and APITracer's `levels` for each.
LEVELS = {"0": 0, "1": 1, "2": 2, "0,1,2": [0, 1, 2]}
# The floor of each level: levels 0 and 1 patch the same callables.
FLOOR = {"0": "0,1", "1": "0,1", "2": "2", "0,1,2": "0,1,2"}
VARIANTS = (
    ("untraced",)
    + tuple(f"floor {f}" for f in dict.fromkeys(FLOOR.values()))
    + tuple(f"{v} {level}" for level in LEVELS for v in ("python logger", "api_tracer"))
)


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def python_variant(level, logger=None):
    """The plain-Python counterpart of `level` (a LEVELS or FLOOR label):
    setattr wrappers over the API list where it has level 0 or 1 (every
    call recorded where it has level 1), over paddle._C_ops where it has
    level 2; the floor where logger is None."""
    levels = level.split(",")
    busy = threading.local()
    parts = []
    if "0" in levels or "1" in levels:
        parts.append(PythonSetattr(logger, dialect=PaddleDialect(), every="1" in levels, busy=busy))
    if "2" in levels:
        parts.append(PaddleOperatorSetattr(logger, busy=busy))
    return parts[0] if len(parts) == 1 else Together(*parts)


def make_variant(name, tmp):
    if name == "untraced":
        return Nothing()
    kind, level = name.rsplit(" ", 1)
    if kind == "floor":
        return python_variant(level)
    if kind == "python logger":
        return python_variant(level, PaddleLogger())
    return APITracer(dialect="paddle", output_path=tmp, levels=LEVELS[level], merge_output=True)


def count_calls(work, level):
    """(api_tracer's, the Python logger's) records of one iteration at
    `level`: those of work(2) minus those of work(1)."""
    tracer, logger = [], []
    for n in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            with APITracer(dialect="paddle", output_path=d, levels=LEVELS[level], merge_output=True):
                work(n)
            with open(os.path.join(d, "api_statistics.yaml")) as f:
                tracer.append(int(f.read().split("Total API calls: ")[1].split()[0]))
        log = PaddleLogger()
        with python_variant(level, log):
            work(n)
        logger.append(sum(log.configs.values()))
    return tracer[1] - tracer[0], logger[1] - logger[0]


def measure_here(workload, n, variant, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        return best_time(WORKLOADS[workload], n, rounds, make_variant(variant, tmp))


def report(workload, n, rounds, repeats):
    work = WORKLOADS[workload]
    t = best_per_variant(__file__, {v: [workload, n, v, rounds] for v in VARIANTS}, repeats)
    base = t["untraced"]
    print(f"\n== {workload}: {n} iterations (thread CPU time, best of {repeats}x{rounds})")
    print(f"  {'untraced':<14} {base * 1e3:9.1f} ms")
    for level in LEVELS:
        calls, logged = count_calls(work, level)
        rows = {
            "floor": (t[f"floor {FLOOR[level]}"], calls),
            "python logger": (t[f"python logger {level}"], logged),
            "api_tracer": (t[f"api_tracer {level}"], calls),
        }
        per_call = {k: (s - base) / (n * c) * 1e6 for k, (s, c) in rows.items()}
        ratio = per_call["api_tracer"] / per_call["python logger"]
        print(f"  level {level}: {calls} calls an iteration recorded (python logger: {logged})")
        for v, (s, _) in rows.items():
            print(f"    {v:<14} {s * 1e3:9.1f} ms   overhead {per_call[v]:6.2f} us/call")
        verdict = "met" if ratio <= 0.2 else "MISSED"
        print(f"    api_tracer / python logger (overhead): {ratio:.3f}   goal <= 0.2: {verdict}")


def main():
    args = command_line(__doc__, measure_here)
    n_tiny, n_cnn, rounds, repeats = (300, 20, 3, 2) if args.quick else (3000, 100, 5, 3)
    print(
        f"Paddle {paddle.__version__}; {len(PaddleDialect().api_list())} APIs (levels 0 and 1),"
        f" {len(operators())} operators (level 2)"
    )
    report("tiny", n_tiny, rounds, repeats)
    report("cnn", n_cnn, rounds, repeats)


if __name__ == "__main__":
    main()
