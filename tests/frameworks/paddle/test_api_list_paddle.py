"""Paddle's API lists (issue 24): the committed files are what the generator
makes for the installed paddle, they hold paddle's public API and nothing
level 0 must leave alone, every name is a patch target, and wrapping them
all leaves a paddle program's results as they are. Torch's lists are as
before."""

import subprocess
import sys

import pytest

from api_tracer.frameworks import dialect_named
from api_tracer.frameworks.dialect import FrameworkDialect, read_api_list
from api_tracer.frameworks.paddle import names as paddle_names
from support import run_script

pytest.importorskip("paddle")

DEFAULT = dialect_named("paddle").api_list_file()
FULL = dialect_named("paddle").api_list_file(full=True)
TORCH = dialect_named("torch").api_list_file()

REPRESENTATIVE = (
    "paddle.concat",
    "paddle.matmul",
    "paddle.nn.functional.relu",
    "paddle.nn.functional.conv2d",
    "paddle.linalg.norm",
    "paddle.fft.fft",
    "paddle.Tensor.__add__",
    "paddle.Tensor.reshape",
    "paddle.nn.Linear",
    "paddle.nn.Linear.forward",
    "paddle.nn.Conv2D",
    "paddle.optimizer.Adam",
    "paddle.optimizer.Adam.step",
    "paddle.optimizer.Optimizer.clear_grad",
    "paddle.optimizer.Optimizer.zero_grad",
    "paddle.Tensor.__getitem__",
    "paddle.Tensor.backward",
)


def generate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "api_tracer.api_list", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_paddle_lists_are_current():
    result = generate("--dialect", "paddle", "--check")
    assert result.returncode == 0, result.stderr


def test_torch_lists_are_unchanged():
    result = generate("--dialect", "torch", "--check")
    assert result.returncode == 0, result.stderr
    header = TORCH.read_text(encoding="utf-8").splitlines()[:3]
    assert header[1].endswith("by: python -m api_tracer.api_list"), header
    assert not any(name.startswith("paddle") for name in read_api_list(TORCH))


def test_default_list_holds_paddles_public_api():
    names = read_api_list(DEFAULT)
    assert len(names) == len(set(names))
    missing = [name for name in REPRESENTATIVE if name not in names]
    assert not missing, missing
    full = set(read_api_list(FULL))
    assert set(names) <= full and len(full) > len(names)
    for name in ("paddle.nn.initializer.Constant", "paddle.nn.Layer.forward", "paddle.Tensor.shape"):
        assert name not in names  # an initializer, the base's forward, a property


def test_lists_leave_out_what_level_0_must_not_wrap():
    prefixes = tuple(paddle_names.SKIP_PREFIXES)
    for path in (DEFAULT, FULL):
        names = read_api_list(path)
        assert not [n for n in names if n in paddle_names.SKIP], path.name
        assert not [n for n in names if n.startswith(prefixes)], path.name
    for name in (
        "paddle.Tensor.__repr__",
        "paddle.Tensor.__deepcopy__",
        "paddle.Tensor.__hash__",
        "paddle.nn.Layer",
        "paddle.optimizer.Optimizer",
        "paddle.set_device",
        "paddle.seed",
        "paddle.save",
    ):
        assert name in paddle_names.SKIP
    assert all(isinstance(why, str) and why for why in {**paddle_names.SKIP, **paddle_names.SKIP_PREFIXES}.values())


def test_every_listed_name_is_a_patch_target():
    dialect = FrameworkDialect()
    for path in (DEFAULT, FULL):
        unresolved = {}
        for name in read_api_list(path):
            target, why = dialect._target(name)
            if target is None:
                unresolved[name] = why
        assert not unresolved, dict(list(unresolved.items())[:5])
    quiet = [name for name in paddle_names.QUIET if dialect._target(name)[0] is None]
    assert not quiet


def test_a_function_records_under_its_own_name_first():
    # level 0 records a function listed under several names under the first
    names = read_api_list(DEFAULT)
    before = [
        ("paddle.reshape", "paddle.Tensor.reshape"),
        ("paddle.concat", "paddle.cat"),
        ("paddle.nn.functional.conv2d", "paddle.conv2d"),
        ("paddle.nn.Conv2D", "paddle.nn.Conv2d"),
        ("paddle.optimizer.Optimizer.clear_grad", "paddle.optimizer.Adam.clear_grad"),
    ]
    for first, alias in before:
        assert names.index(first) < names.index(alias), (first, alias)


PROGRAM = """
    import io, sys, warnings
    warnings.simplefilter("ignore")
    from contextlib import redirect_stdout
    import numpy as np
    import paddle
    import api_tracer
    from api_tracer.frameworks.paddle import names as paddle_names
    from api_tracer.frameworks.dialect import FrameworkDialect, read_api_list
    from api_tracer.trace.hooks import SetattrHook

    class Listed(FrameworkDialect):
        name = "paddle"
        def hook_classes(self): return {0: SetattrHook}
        def api_list(self, full=False): return read_api_list(sys.argv[1])
        def quiet_targets(self):
            return [t for t in (self._target(a)[0] for a in paddle_names.QUIET) if t is not None]

    def program():
        paddle.seed(0)
        lin, conv = paddle.nn.Linear(8 * 6 * 6, 4), paddle.nn.Conv2D(3, 8, 3)
        opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=lin.parameters() + conv.parameters())
        x = paddle.to_tensor(np.arange(384, dtype="float32").reshape(2, 3, 8, 8) / 100)
        y = paddle.to_tensor([1, 3])
        for _ in range(2):
            out = lin(paddle.flatten(paddle.nn.functional.relu(conv(x)), 1))
            loss = paddle.nn.functional.cross_entropy(out, y)
            loss.backward(); opt.step(); opt.clear_grad()
        t = paddle.concat([x[0, 0, :2, :3], paddle.ones([1, 3])]) * 2 - 1
        print(out, loss, float(loss), t, t.reshape([9]).tolist(), lin.weight[:2, :3], format(t.sum(), ".3f"))

    def printed():
        with redirect_stdout(io.StringIO()) as f:
            program()
        return f.getvalue()

    untraced = printed()
    with api_tracer.APITracer(dialect=Listed(), output_path="out", levels=0):
        traced = printed()
    print("SAME" if traced == untraced == printed() else "DIFFERENT:\\n" + untraced + "\\n----\\n" + traced)
"""


def test_wrapping_the_default_list_leaves_a_program_as_it_was(tmp_path):
    result = run_script(PROGRAM, tmp_path, str(DEFAULT), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "SAME", result.stdout
    apis = (tmp_path / "out" / "api_apis_level_0.txt").read_text().split()
    for name in (
        "paddle.nn.Conv2D.forward",
        "paddle.nn.functional.cross_entropy",
        "paddle.optimizer.Adam.step",
        "paddle.optimizer.Adam.clear_grad",  # (Optimizer's, named by the class the program called it on)
        "paddle.concat",
        "paddle.Tensor.__mul__",
    ):
        assert name in apis, apis
    assert not [name for name in apis if name.startswith(("paddle.Tensor.numpy", "paddle.Tensor.is_"))]  # printing's
