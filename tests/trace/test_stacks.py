"""record_stack: up to three distinct stacks per API, in each stack format."""

import yaml

from support import run_script

CODE = """
    import torch
    from api_tracer import APITracer

    def helper():
        return torch.ones(1)

    class Net:
        def forward(self):
            return helper()

    with APITracer(output_path="t", levels=1, merge_output=True, record_stack=True, stack_format="{fmt}"):
        for _ in range(3):
            Net().forward()
        helper()
        torch.ones(2)
        torch.ones(3)
        torch.ones(4)
        torch.zeros(1)
"""


def stacks(tmp_path, fmt):
    result = run_script(CODE.replace("{fmt}", fmt), tmp_path, name="prog.py")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load((tmp_path / "t" / "api_stacks.yaml").read_text())


def test_short_format_and_the_three_stack_limit(tmp_path):
    s = stacks(tmp_path, "short")
    assert list(s) == ["torch.ones", "torch.zeros"]
    assert s["torch.ones"]["3stacks"] == [
        ["prog.py:14 in <module>", "prog.py:10 in Net.forward", "prog.py:6 in helper"],
        ["prog.py:15 in <module>", "prog.py:6 in helper"],
        ["prog.py:16 in <module>"],
    ]
    assert s["torch.zeros"]["3stacks"] == [["prog.py:19 in <module>"]]


def test_full_format(tmp_path):
    s = stacks(tmp_path, "full")
    frames = s["torch.zeros"]["3stacks"][0]
    assert frames == [f'File "{tmp_path / "prog.py"}", line 19, in <module>']


def test_api_format(tmp_path):
    s = stacks(tmp_path, "api")
    assert s["torch.ones"]["3stacks"][0] == ["__main__.<module>", "__main__.Net.forward", "__main__.helper"]
