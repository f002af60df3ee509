"""What the report's tests (test_report.py, test_report_browser.py) draw:
a small program traced several ways, a trace holding an API name, a config
line and stack frames that would be markup and script were they written
into the page as they are, and a small layer profile."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Dict

import torch

from api_tracer import APITracer, Profile, TracingHook

HOSTILE = (
    "x.<script>document.body.dataset.pwned='script'</script>"
    "<img src=x onerror=\"document.body.dataset.pwned='img'\">&amp;'q'"
)
STACK_FILE = "<img src=y onerror=\"document.body.dataset.pwned='stack'\">.py"  # in each stack's frames


def program() -> None:
    x = torch.randn(2, 3)
    for _ in range(3):
        torch.add(x, x, alpha=2)
    torch.add(torch.ones(4), 1)
    torch.nn.functional.relu(x)


class HostileHook(TracingHook):
    """Records calls of `lib.f` under the name HOSTILE, at level 5."""

    level = 5
    lib = types.SimpleNamespace(f=lambda *args, **kwargs: None)

    def install(self) -> None:
        self.patch(self.lib, "f", self.wrap(self.lib.f, HOSTILE))

    def uninstall(self) -> None:
        self.restore()


def make_traces(top: Path) -> Dict[str, Path]:
    """The program traced at levels 1 and 2 into: per-level sets ("split"),
    one merged set with stacks ("merged"), sets without api_trace.*
    ("untraced"), sets whose trace trace_limit cut ("cut"); and HOSTILE
    called at level 5 beside torch.ones at level 1, from STACK_FILE
    ("hostile")."""
    options = {
        "split": {},
        "merged": {"merge_output": True, "record_stack": True},
        "untraced": {"stream_trace": False},
        "cut": {"trace_limit": 400},
    }
    for name, opts in options.items():
        with APITracer(output_path=str(top / name), levels=[1, 2], **opts):
            program()
    calls = compile(
        "torch.ones(2, 3)\nfor _ in range(2):\n    lib.f(torch.ones(2, 3), 'a</td><b>', k='<i>')\n", STACK_FILE, "exec"
    )
    with APITracer(output_path=str(top / "hostile"), levels=[1, HostileHook], record_stack=True):
        exec(calls, {"lib": HostileHook.lib, "torch": torch})
    return {name: top / name for name in list(options) + ["hostile"]}


def make_profile() -> Profile:
    """A profile, with memory, of one step of a small model: Sequential(
    Linear, ReLU, Sequential(Linear, Tanh))."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(32, 8), torch.nn.Tanh())
    )
    with Profile(model, profile_memory=True) as prof:
        model(torch.randn(4, 16)).sum().backward()
    return prof
