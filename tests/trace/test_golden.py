"""The product description's own example produces its expected files, byte for byte."""

import shutil

import pytest

from support import GOLDEN, run_script

EXAMPLES = [("example.py", "trace_output"), ("example_stack.py", "trace_output_stack")]


@pytest.mark.parametrize("script,output", EXAMPLES)
def test_seed_example_matches_expected_bytes(tmp_path, script, output):
    example = tmp_path / "seed_example"
    shutil.copytree(GOLDEN / "seed_example", example)
    code = (example / script).read_text()
    result = run_script(code, example, name=script)
    assert result.returncode == 0, result.stderr
    expected_dir = example / "expected"
    produced_dir = example / output
    expected = sorted(p.name for p in expected_dir.iterdir())
    if script == "example.py":
        expected.remove("api_stacks.yaml")  # only with record_stack=True
    assert sorted(p.name for p in produced_dir.iterdir()) == expected
    for name in expected:
        assert (produced_dir / name).read_bytes() == (expected_dir / name).read_bytes(), name
