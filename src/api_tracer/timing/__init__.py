"""api-tracer bench: config lines as benchmarks (docs/bench.md): each timed in
rounds in replay's workers (run.py, measure.py), written and read back
(results.py), weighed by its calls and compared between runs (compare.py,
stats.py), and shown (output.py)."""
