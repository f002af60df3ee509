"""The Paddle dialect's per-call overhead, as ratios measured side by side.

    python bench/bench_paddle.py [--quick]

Level 0 over Paddle's default API list, on two CPU workloads: an op-bound
loop of tiny tensors (all overhead, no compute) and a small CNN's forward,
backward and optimizer step. Each variant runs in a fresh process and takes
the thread's CPU time, best of its rounds, the set repeated interleaved:

  untraced       the workload alone
  floor          Python wrappers over the same API list that only call through
  python logger  the same wrappers doing a plain-Python logger's per-call
                 work on the same fields (bench/python_logger.py, PaddleLogger)
  api_tracer     APITracer(dialect="paddle", levels=0), writing its files

It prints the overhead per call (time minus untraced, over the calls level
0 records) and api_tracer's overhead over the Python logger's (the goal:
at most 0.2).
"""

from __future__ import annotations

import os
import sys
import tempfile

import paddle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_per_variant, best_time, command_line
from python_logger import PaddleLogger, PythonSetattr

from api_tracer import APITracer
from api_tracer.frameworks.paddle.dialect import PaddleDialect

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
VARIANTS = ("untraced", "floor", "python logger", "api_tracer")


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def make_variant(name, tmp):
    if name == "untraced":
        return Nothing()
    if name == "floor":
        return PythonSetattr(dialect=PaddleDialect())
    if name == "python logger":
        return PythonSetattr(PaddleLogger(), dialect=PaddleDialect())
    return APITracer(dialect="paddle", output_path=tmp, levels=0, merge_output=True)


def count_calls(work):
    """The calls one iteration makes at level 0."""
    counts = []
    for n in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            with APITracer(dialect="paddle", output_path=d, levels=0, merge_output=True):
                work(n)
            with open(os.path.join(d, "api_statistics.yaml")) as f:
                counts.append(int(f.read().split("Total API calls: ")[1].split()[0]))
    return counts[1] - counts[0]


def measure_here(workload, n, variant, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        return best_time(WORKLOADS[workload], n, rounds, make_variant(variant, tmp))


def report(workload, n, rounds, repeats):
    calls = count_calls(WORKLOADS[workload])
    t = best_per_variant(__file__, {v: [workload, n, v, rounds] for v in VARIANTS}, repeats)
    per_call = {k: (t[k] - t["untraced"]) / (n * calls) * 1e6 for k in t}
    ratio = per_call["api_tracer"] / per_call["python logger"]
    print(f"\n== {workload}: {n} iterations, {calls} calls each (thread CPU time, best of {repeats}x{rounds})")
    for v in VARIANTS:
        print(f"  {v:<14} {t[v] * 1e3:9.1f} ms   overhead {per_call[v]:6.2f} us/call")
    print(f"  api_tracer / python logger (overhead): {ratio:.3f}   goal <= 0.2: {'met' if ratio <= 0.2 else 'MISSED'}")


def main():
    args = command_line(__doc__, measure_here)
    n_tiny, n_cnn, rounds, repeats = (300, 20, 3, 2) if args.quick else (3000, 100, 5, 3)
    print(f"Paddle {paddle.__version__}; level 0 over {len(PaddleDialect().api_list())} APIs")
    report("tiny", n_tiny, rounds, repeats)
    report("cnn", n_cnn, rounds, repeats)


if __name__ == "__main__":
    main()
