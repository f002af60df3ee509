"""The tracing runtime: what runs inside a traced program.

`APITracer` (tracer.py) checks its options (options.py), opens the C++
session and installs one hook per level (hooks.py; level 0's instrumented
code, instrument.py); module_tree.py follows a thread through a model's
modules, eager.py keeps compiled code eager while a Python level traces,
signals.py and follow.py keep the files whole under signals and in child
processes. What a framework adds to it is its dialect (frameworks/).
"""
