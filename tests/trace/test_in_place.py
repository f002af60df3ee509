"""Level 0 in place: an API records its calls and stays what it is.

Level 0 instruments each API where it stands (a Python function's code, a C
function's vectorcall, a method descriptor's method table entry) instead of
putting a wrapper in its place. These tests hold it to that: the
instrumented code behaves as the original for every introspection a program
uses, the API objects and torch's caches of them are the very objects they
are untraced, and tracing in and out leaves nothing behind.
"""

import functools
import gc
import inspect
import io
import pickle
import sys
import textwrap
import traceback
import types
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from api_tracer import _C, APITracer
from api_tracer.frameworks.torch.dialect import PyTorchDialect
from api_tracer.trace import instrument
from support import trace_lines

pytestmark = pytest.mark.skipif(not instrument.SUPPORTED, reason="instrumented code is made for CPython 3.11")


# -- the instrumented code behaves as the original ---------------------------------------------

SAMPLES = textwrap.dedent("""
    import warnings

    def shapes(a, b=2, *args, k=3, **kw):
        total = a + b
        for x in args:
            if x < 0:
                continue
            if x > 100:
                break
            total += x
        try:
            total += kw["z"]
        except KeyError:
            total -= 1
        finally:
            total *= 2
        with open(__file__) as fh:
            fh.readline()
        if k == 99:
            raise ValueError("k is 99")
        warnings.warn("careful", stacklevel=2)
        def inner():
            return a + k
        return total + inner()

    def returns_in_finally(x):
        try:
            return 1 / x
        finally:
            x = 0

    def comprehensions(n):
        return [i for i in range(n)] + list(map(lambda v: v * 2, range(n)))

    def reraises(x):
        try:
            try:
                return {}[x]
            except KeyError as e:
                raise IndexError(x) from e
        except IndexError:
            if x == "again":
                raise
            return "handled"

    def positional_only(a, b=5, /, c=6):
        return a, b, c

    def one_line(x): return x * 3
""")


def _big_function_source(n: int) -> str:
    """A function whose jumps and constants need EXTENDED_ARG prefixes."""
    lines = ["def big(x):", "    total = 0", "    for i in range(x):"]
    lines += [f"        if i == {k}:\n            total += {k * 1.5!r}" for k in range(n)]
    lines += ["    return total"]
    return "\n".join(lines) + "\n"


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


SAMPLE = _load(SAMPLES, "samples")
BIG = _load(_big_function_source(400), "big")

CASES = [
    (SAMPLE.shapes, (1,), {}),
    (SAMPLE.shapes, (1, 5, 7, -1, 200, 3), {"z": 4}),
    (SAMPLE.shapes, (1,), {"k": 99}),
    (SAMPLE.returns_in_finally, (0,), {}),
    (SAMPLE.returns_in_finally, (2,), {}),
    (SAMPLE.comprehensions, (3,), {}),
    (SAMPLE.reraises, ("x",), {}),
    (SAMPLE.reraises, ("again",), {}),
    (SAMPLE.positional_only, (1,), {}),
    (SAMPLE.positional_only, (1, 2, 3), {}),
    (SAMPLE.one_line, (4,), {}),
    (BIG.big, (390,), {}),
]


def observe(fn, args, kwargs):
    """What a program and its tools can see of one call: the result or the
    exception with its whole traceback, the warnings with their places,
    every event a tracing debugger gets, and every call a profiler sees."""
    events, profiled = [], []
    names = {c.co_name for c in (fn.__code__, *[k for k in fn.__code__.co_consts if isinstance(k, types.CodeType)])}

    def tracer(frame, event, arg):
        if frame.f_code.co_name in names:
            events.append((frame.f_code.co_name, event, frame.f_lineno))
        return tracer

    def profiler(frame, event, arg):
        if event.startswith("c_"):
            profiled.append((event, getattr(arg, "__qualname__", type(arg).__name__)))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for hook in (sys.settrace, sys.setprofile):
            hook(tracer if hook is sys.settrace else profiler)
            try:
                result = ("returned", fn(*args, **kwargs))
            except Exception as e:  # noqa: BLE001 - what the call raised is compared, traced and not
                result = ("raised", "".join(traceback.format_exception(e)))
            finally:
                hook(None)
    return result, events, profiled, [(w.filename, w.lineno, str(w.message)) for w in caught]


@pytest.mark.parametrize("fn, args, kwargs", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_instrumented_code_is_seen_as_the_original(fn, args, kwargs):
    untraced = observe(fn, args, kwargs)
    original = fn.__code__
    code = instrument.instrument(original, _C.CodeHook(fn))
    assert code is not None and code.co_code != original.co_code
    fn.__code__ = code
    try:
        traced = observe(fn, args, kwargs)
        signature = inspect.signature(fn)
    finally:
        fn.__code__ = original
    assert traced == untraced
    assert signature == inspect.signature(fn)


def test_generators_are_not_instrumented():
    def gen():
        yield 1

    assert instrument.instrument(gen.__code__, _C.CodeHook(gen)) is None


def test_every_python_function_of_the_api_lists_is_instrumented():
    dialect = PyTorchDialect()
    for full in (False, True):
        targets, _ = dialect.setattr_targets(dialect.api_list(full=full))
        for t in targets:
            raw = t.raw.fget if isinstance(t.raw, property) else getattr(t.raw, "__func__", t.raw)
            if isinstance(raw, types.FunctionType) and not raw.__code__.co_flags & 0x2A0:
                assert instrument.instrument(raw.__code__, _C.CodeHook(raw)) is not None, t.api


# -- the APIs and torch's caches of them are the objects they are untraced -----------------------


def relu_block() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0))


def test_a_device_context_works_while_tracing_and_after(out):
    # The first device context of the process may be entered inside the block.
    code = textwrap.dedent("""
        import torch
        from api_tracer import APITracer
        with APITracer(output_path=OUT, levels=0):
            with torch.device("meta"):
                inside = torch.empty(3).device, torch.nn.Linear(1000, 1000).weight.device
        with torch.device("meta"):
            after = torch.empty(3).device, torch.nn.Linear(1000, 1000).weight.device
        print(inside, after)
    """).replace("OUT", repr(str(out)))
    import subprocess

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["(device(type='meta'),", "device(type='meta'))"] * 2


def saved(obj) -> dict:
    """torch.save's archive of `obj`, member by member (but for the id
    each save draws)."""
    import zipfile

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with zipfile.ZipFile(buffer) as z:
        return {n.split("/", 1)[1]: z.read(n) for n in z.namelist() if not n.endswith("serialization_id")}


def test_pickling_by_reference_gives_the_bytes_it_gives_untraced(out):
    """A module holding F.relu (TransformerEncoderLayer's default, taken
    before tracing) pickles while tracing and after, to the same bytes;
    so do modules, functions and partials of them made while tracing."""
    torch.manual_seed(0)
    before = relu_block()
    functions = (F.relu, torch.add, torch.Tensor.add, functools.partial(F.relu), nn.Linear.forward)
    untraced = pickle.dumps(before), saved(before), pickle.dumps(functions)
    with APITracer(output_path=str(out), levels=0):
        traced = pickle.dumps(before), saved(before), pickle.dumps(functions)
        torch.manual_seed(0)
        made = relu_block()
        held = (F.relu, torch.add, torch.Tensor.add, functools.partial(F.relu), nn.Linear.forward)
        made_while = saved(made), pickle.dumps(held)
    assert traced == untraced
    assert made_while == untraced[1:] and (saved(made), pickle.dumps(held)) == untraced[1:]
    buffer = io.BytesIO()
    torch.save(made, buffer)
    buffer.seek(0)
    assert torch.load(buffer, weights_only=False)[1].activation is F.relu


def test_identity_checks_of_torch_see_the_api_itself(out):
    """`activation is F.relu` keeps TransformerEncoderLayer on its fast path."""
    with APITracer(output_path=str(out), levels=0):
        layer = nn.TransformerEncoderLayer(4, 2, 8)
        assert layer.activation_relu_or_gelu == 1
        assert torch.nn.functional.relu is F.relu and type(torch.add) is types.BuiltinFunctionType
    assert nn.TransformerEncoderLayer(4, 2, 8).activation_relu_or_gelu == 1


def test_introspection_sees_the_api_itself(out):
    def seen(f):
        return (
            getattr(f, "__module__", None),
            f.__qualname__,
            f.__name__,
            f.__doc__,
            getattr(f, "__wrapped__", None),
            str(inspect.signature(f)) if isinstance(f, types.FunctionType) else f.__text_signature__,
        )

    apis = (F.relu, F.dropout, torch.add, torch.Tensor.add, torch.Tensor.dim, nn.Linear.forward, nn.Linear.__init__)
    untraced = [seen(f) for f in apis]
    with APITracer(output_path=str(out), levels=0):
        traced = [seen(f) for f in apis]
        source = inspect.getsource(F.dropout)
    assert traced == untraced
    assert source == inspect.getsource(F.dropout)


def graph_of(fn):
    gm = torch.fx.symbolic_trace(fn)
    return gm.code, [n.target for n in gm.graph.nodes]


def scripted(x):
    return F.relu(torch.add(x, 1)).sum()


def test_fx_torchscript_and_compile_of_code_calling_traced_apis(out):
    x = torch.randn(3)
    untraced_graph = graph_of(scripted)
    with APITracer(output_path=str(out), levels=0):
        traced_graph = graph_of(scripted)
        script_result = torch.jit.script(scripted)(x)
        compiled_result = torch.compile(scripted, backend="eager")(x)
    assert traced_graph[0] == untraced_graph[0]
    assert all(a is b for a, b in zip(traced_graph[1], untraced_graph[1]))
    assert traced_graph[1][1] is torch.add and traced_graph[1][2] is F.relu
    assert torch.equal(script_result, scripted(x)) and torch.equal(compiled_result, scripted(x))
    assert torch.equal(torch.jit.script(scripted)(x), scripted(x))


@pytest.mark.parametrize("built", ["before", "while tracing"])
def test_torch_knows_what_level_0_wraps_while_tracing_and_after(out, built):
    """What level 0 must wrap by setattr (torch.set_num_threads, a METH_O
    builtin) stands in torch's namespace while tracing: TorchScript's table
    of builtins knows the wrapper for its original, and what torch's caches
    took while tracing is put right at stop. In a fresh process, with the
    caches filled before the tracer starts (torch's own import fills
    TorchScript's) or while it runs."""
    code = (
        textwrap.dedent("""
        import torch, torch.jit._builtins as builtins
        from api_tracer import APITracer
        if BUILT_WHILE:
            builtins._builtin_table = None
            torch.overrides.get_ignored_functions.cache_clear()
        with APITracer(output_path=OUT, levels=0) as tracer:
            assert "torch.set_num_threads" in tracer._hooks[0].wrapped
            wrapper = torch.set_num_threads
            assert builtins._find_builtin(wrapper) == "aten::set_num_threads"
            assert wrapper in torch.overrides.get_ignored_functions()
        assert wrapper is not torch.set_num_threads and builtins._find_builtin(wrapper) is None
        assert builtins._find_builtin(torch.set_num_threads) == "aten::set_num_threads"
        assert any(f is torch.set_num_threads for f in torch.overrides.get_ignored_functions())
        print("ok")
    """)
        .replace("OUT", repr(str(out)))
        .replace("BUILT_WHILE", str(built != "before"))
    )
    import subprocess

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr


# -- the calls are recorded once, whatever happens inside ----------------------------------------


def test_an_exception_through_an_instrumented_function_closes_its_call(out):
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        with pytest.raises(IndexError):
            F.softmax(torch.ones(2), dim=5)
        F.softmax(torch.ones(2), dim=0)  # recorded: the failed call is closed
        nn.Dropout(0.5).eval()(torch.ones(2))
    assert trace_lines(out) == [
        "torch.ones(2)",
        'torch.nn.functional.softmax(Tensor([2], "float32"), dim=5)',
        "torch.ones(2)",
        'torch.nn.functional.softmax(Tensor([2], "float32"), dim=0)',
        "torch.nn.Dropout(p=0.5)",
        "torch.ones(2)",
        'torch.nn.Dropout.forward(Eval(torch.nn.Dropout()), Tensor([2], "float32"))',
    ]


def test_python_functions_are_written_in_one_spelling(out):
    x = torch.ones(2, 3)
    with APITracer(output_path=str(out), levels=0, merge_output=True, api_list=["torch.nn.functional.dropout"]):
        F.dropout(x, 0.2)
        F.dropout(x, p=0.2, training=True)
        F.dropout(input=x, p=0.2)
        F.dropout(x, training=False)
    assert trace_lines(out) == ['torch.nn.functional.dropout(Tensor([2, 3], "float32"), p=0.2)'] * 3 + [
        'torch.nn.functional.dropout(Tensor([2, 3], "float32"), training=False)'
    ]


# -- in and out a thousand times leaves the process as it was --------------------------------------


def process_state():
    from torch.nn.modules import module as module_hooks
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return dict(
        function_modes=len(_get_current_function_mode_stack()),
        dispatch_modes=len(_get_current_dispatch_mode_stack()),
        module_hooks=[
            len(getattr(module_hooks, name))
            for name in dir(module_hooks)
            if name.startswith("_global_") and isinstance(getattr(module_hooks, name), dict)
        ],
        rng=torch.random.get_rng_state(),
        profile=sys.getprofile(),
        trace=sys.gettrace(),
        filters=warnings.filters,
        filters_list=list(warnings.filters),
        codes={name: f.__code__ for name, f in vars(F).items() if isinstance(f, types.FunctionType)},
        tensor=dict(vars(torch.Tensor)),
        torch_ns=dict(vars(torch)),
    )


def same_state(a, b):
    return all(
        torch.equal(a[k], b[k])
        if k == "rng"
        else (
            a[k] is b[k]
            if k in ("filters", "profile", "trace")
            else (a[k].keys() == b[k].keys() and all(a[k][n] is b[k][n] for n in a[k]))
            if isinstance(a[k], dict)
            else a[k] == b[k]
        )
        for k in a
    )


def test_a_thousand_tracers_in_and_out_leave_the_process_as_it_was(tmp_path):
    """Modes, module hooks, profile and trace functions, warning filters,
    torch's namespace and every function's code are as they were; the
    random numbers drawn are the program's own (the same as untraced); and
    memory does not grow with the sessions."""
    import contextlib
    import resource

    x = torch.ones(4, 4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))

    def one(i, traced=True):
        levels = [0, 1, 2, 3] if i % 2 else 0
        with (
            APITracer(output_path=str(tmp_path / "o"), levels=levels, stream_trace=False)
            if traced
            else contextlib.nullcontext()
        ):
            model(x).sum().backward()
            torch.add(x, 1)

    for i in range(20):  # warm: instrumented code, slots, caches
        one(i)
    gc.collect()
    before, rss = process_state(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torch.manual_seed(0)
    for i in range(1000):
        one(i)
    gc.collect()
    after = process_state()
    torch.manual_seed(0)
    for i in range(1000):
        one(i, traced=False)
    untraced_rng = torch.random.get_rng_state()
    assert torch.equal(after.pop("rng"), untraced_rng)
    before.pop("rng")
    assert [k for k in before if not same_state({k: before[k]}, {k: after[k]})] == []
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
    assert grown_kib < 64 * 1024, f"{grown_kib} KiB more after 1000 tracers"
