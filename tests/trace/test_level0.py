"""Level 0: APIs wrapped by setattr, every descriptor kind kept, everything restored."""

import types

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from api_tracer import APITracer
from support import run_in_threads, trace_lines


class Widget:
    """A class of the test's own, wrapped through api_list."""

    scale = 3

    def __init__(self, n):
        self.n = n

    def grow(self, k=1):
        return self.n + k

    @staticmethod
    def make(n):
        return Widget(n)

    @classmethod
    def build(cls, n):
        return cls(n)

    @property
    def double(self):
        return 2 * self.n


class SubWidget(Widget):
    pass


W = f"{__name__}.Widget"
ALL = [W, f"{W}.grow", f"{W}.make", f"{W}.build", f"{W}.double"]


def test_level0_sees_functions_methods_and_classes(out):
    lin = None
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        lin = nn.Linear(3, 4)
        x = torch.randn(2, 3)
        y = lin(x)
        torch.nn.functional.relu(y)
        y.sum(dim=0)
        x[:, 1]
    assert trace_lines(out) == [
        "torch.nn.Linear(3, 4)",
        "torch.randn(2, 3)",
        'torch.nn.Linear.forward(torch.nn.Linear(3, 4), Tensor([2, 3], "float32"))',
        'torch.nn.functional.relu(Tensor([2, 4], "float32"))',
        'torch.Tensor.sum(Tensor([2, 4], "float32"), dim=0)',
        'torch.Tensor.__getitem__(Tensor([2, 3], "float32"), (slice(None, None, None), 1))',
    ]
    assert isinstance(lin, nn.Linear) and lin(torch.ones(1, 3)).shape == (1, 4)


def test_module_made_before_tracing_is_its_constructor_call_or_a_placeholder(out):
    conv = nn.Conv2d(3, 8, 3, stride=2, bias=False)
    norm = nn.LayerNorm(4, eps=1e-3)
    seq = nn.Sequential(nn.ReLU(), nn.Dropout(0.25))

    class Mine(nn.Module):
        def forward(self, x):
            return x

    opaque = nn.Sequential(Mine())
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        conv(torch.zeros(1, 3, 8, 8))
        norm(torch.zeros(2, 4))
        seq(torch.zeros(2))
        opaque(torch.zeros(3))
    lines = trace_lines(out)
    assert (
        "torch.nn.Conv2d.forward(torch.nn.Conv2d(3, 8, (3, 3), stride=(2, 2), bias=False), "
        'Tensor([1, 3, 8, 8], "float32"))' in lines
    )
    assert 'torch.nn.LayerNorm.forward(torch.nn.LayerNorm((4,), eps=0.001), Tensor([2, 4], "float32"))' in lines
    # A container is the constructor call of its children ...
    assert (
        "torch.nn.Sequential.forward(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Dropout(p=0.25)), "
        'Tensor([2], "float32"))'
    ) in lines
    # ... when each can be known; else a placeholder names the class.
    assert 'torch.nn.Sequential.forward(Module("torch.nn.Sequential"), Tensor([3], "float32"))' in lines


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_a_module_made_while_tracing_is_written_as_one_made_before(out):
    """However the program spelled the constructor call (a default given,
    a keyword for a positional), the module argument is written the way a
    module made before tracing is, so that a replayed line traces back to
    itself. Only where its arguments cannot be read back (nn.Transformer
    keeps none of its own) does the call level 0 saw stand for it."""
    made_before = nn.CrossEntropyLoss(ignore_index=-100), nn.Linear(in_features=3, out_features=2)
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        made_while = nn.CrossEntropyLoss(ignore_index=-100), nn.Linear(in_features=3, out_features=2)
        for loss, linear in (made_before, made_while):
            loss(linear(torch.zeros(4, 3)), torch.tensor([0, 1, -100, 1]))
        # (spelled positionally: written in the one spelling the signature gives)
        transformer = nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True)
        transformer(torch.zeros(1, 3, 8), torch.zeros(1, 2, 8))
    lines = trace_lines(out)
    assert lines.count('torch.nn.Linear.forward(torch.nn.Linear(3, 2), Tensor([4, 3], "float32"))') == 2
    assert (
        lines.count(
            'torch.nn.CrossEntropyLoss.forward(torch.nn.CrossEntropyLoss(), Tensor([4, 2], "float32"), '
            'Tensor([4], "int64"))'
        )
        == 2
    )
    made = (
        "torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, "
        "dim_feedforward=16, dropout=0.0, batch_first=True)"
    )
    assert f'torch.nn.Transformer.forward({made}, Tensor([1, 3, 8], "float32"), Tensor([1, 2, 8], "float32"))' in lines


def test_descriptor_kinds_are_kept(out):
    before = {k: Widget.__dict__[k] for k in ("__init__", "grow", "make", "build", "double")}
    with APITracer(output_path=str(out), levels=0, merge_output=True, api_list=ALL):
        assert isinstance(Widget.__dict__["make"], staticmethod)
        assert isinstance(Widget.__dict__["build"], classmethod)
        assert isinstance(Widget.__dict__["double"], property)
        w = Widget(2)
        assert w.grow(3) == 5 and Widget.grow(w) == 3
        assert Widget.make(4).n == 4 and w.make(5).n == 5
        sub = SubWidget.build(6)  # a classmethod binds the subclass it is called on
        assert type(sub) is SubWidget and sub.n == 6
        assert w.double == 4
        assert Widget.scale == 3
    assert {k: Widget.__dict__[k] for k in before} == before
    assert all(Widget.__dict__[k] is v for k, v in before.items())
    lines = trace_lines(out)
    assert lines[0] == f"{W}(2)"
    assert f'{W}.grow(Opaque("{W}"), k=3)' in lines  # a Python function: bound, optional by keyword
    assert f"{W}.make(4)" in lines
    assert f"{W}.build({__name__}.SubWidget, 6)" in lines
    # property getters are left out by default (noise control) ...
    assert not any(".double" in line for line in lines)


def test_property_getter_recorded_when_not_excluded(out):
    with APITracer(output_path=str(out), levels=0, merge_output=True, api_list=ALL, exclude_apis=[]):
        assert Widget(5).double == 10
    assert f'{W}.double.__get__(Opaque("{W}"))' in trace_lines(out)


def snapshot():
    import torch.nn.functional as F

    owners = [torch, F, torch.Tensor, nn.Linear, nn.Conv2d, nn.Tanh, nn.Module, torch.optim.SGD]
    attrs = {(id(o), k): v for o in owners for k, v in list(vars(o).items())}
    codes = {
        (id(o), k): v.__code__
        for (o_id, k), v in attrs.items()
        for o in owners
        if id(o) == o_id and isinstance(v, types.FunctionType)
    }
    return attrs, codes


def test_everything_is_restored_after_stop(out):
    """In place: while tracing, every attribute is the very object it was
    (only what cannot be patched in place is wrapped by setattr), and after
    stop every function has its own code again."""
    attrs, codes = snapshot()
    tracer = APITracer(output_path=str(out), levels=0)
    tracer.start()
    try:
        assert type(torch.add).__name__ == "builtin_function_or_method"
        assert torch.nn.functional.relu.__code__ is not codes[(id(torch.nn.functional), "relu")]
        assert "__init__" not in vars(nn.Tanh)  # its inherited __init__ is patched where it is
        hook = tracer._hooks[0]
        wrapped = {(id(t.owner), t.attr) for t in hook.dialect.setattr_targets(hook.wrapped)[0]}
        assert (id(torch.Tensor), "__getitem__") in wrapped  # a slot wrapper: no way in place
        during, _ = snapshot()
        changed = {k for k in during.keys() | attrs.keys() if during.get(k) is not attrs.get(k)}
        assert changed and changed <= wrapped
    finally:
        tracer.stop()
    after, after_codes = snapshot()
    assert after.keys() == attrs.keys() and all(after[k] is attrs[k] for k in attrs)
    assert after_codes.keys() == codes.keys() and all(after_codes[k] is codes[k] for k in codes)


def test_everything_is_restored_after_an_exception(out):
    before = snapshot()[0]
    with pytest.raises(KeyError, match="boom"):
        with APITracer(output_path=str(out), levels=0, merge_output=True):
            torch.ones(2)
            raise KeyError("boom")
    after = snapshot()[0]
    assert all(after[k] is before[k] for k in before) and after.keys() == before.keys()
    assert trace_lines(out) == ["torch.ones(2)"]


def test_outermost_calls_only(out):
    """torch's own calls inside a recorded call are not recorded again."""
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        torch.nn.functional.softmax(torch.ones(2, 2), dim=1)  # calls Tensor.softmax inside
    assert trace_lines(out) == ["torch.ones(2, 2)", 'torch.nn.functional.softmax(Tensor([2, 2], "float32"), dim=1)']


def test_exceptions_of_the_api_propagate_and_the_call_is_recorded(out):
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        with pytest.raises(RuntimeError, match="size of tensor a"):
            torch.add(torch.ones(2), torch.ones(3))
    assert trace_lines(out)[-1] == 'torch.add(Tensor([2], "float32"), Tensor([3], "float32"))'


def test_wrappers_kept_after_stop_call_through(out):
    """What level 0 wraps by setattr (a slot wrapper, here), kept past
    stop, calls straight through; so does a bound method made while tracing
    from a method descriptor patched in place."""
    t = torch.arange(6.0)
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        kept = torch.Tensor.__getitem__
        bound = t.add
    assert type(kept).__name__ == "ApiWrapper"
    assert kept(t, 2).item() == 2.0 and bound(1)[0].item() == 1.0
    assert kept.__wrapped__ is torch.Tensor.__getitem__ and kept.__name__ == "__getitem__"
    assert kept == torch.Tensor.__getitem__ and hash(kept) == hash(torch.Tensor.__getitem__)
    assert trace_lines(out) == []


def test_threads_all_recorded(out):
    n_threads, n_calls = 4, 50

    def work():
        for _ in range(n_calls):
            torch.zeros(2)

    with APITracer(output_path=str(out), levels=0, merge_output=True):
        run_in_threads(work, n_threads)
    assert trace_lines(out) == ["torch.zeros(2)"] * (n_threads * n_calls)
    stats = (out / "api_statistics.yaml").read_text()
    assert f"Total API calls: {n_threads * n_calls}" in stats


def test_start_wraps_the_whole_default_api_list_with_no_skips(out):
    """Correctness of install over the whole default list (timing is in bench/)."""
    from api_tracer.frameworks.torch.dialect import PyTorchDialect

    names = PyTorchDialect().api_list()
    assert len(names) > 1500
    tracer = APITracer(output_path=str(out), levels=0)
    tracer.start()
    hook = tracer._hooks[0]
    assert not hook.skipped, hook.skipped  # the default list holds only wrappable APIs
    tracer.stop()


# -- an object listed under several names: each call under the name it was made through


def apis(out):
    return [line.split("(", 1)[0] for line in trace_lines(out)]


class MyOptimizer(torch.optim.Optimizer):
    """An optimizer of the program's own: torch's zero_grad, inherited."""

    def __init__(self, params):
        super().__init__(params, {})

    def step(self, closure=None):
        return None


def test_a_method_shared_by_classes_is_named_by_the_class_it_is_called_on(out):
    """Optimizer.zero_grad is every optimizer's, and Adam.step is AdamW's
    too: one function each, listed under every class; a call is named by
    the class of its optimizer (or, for a class of the program's own, by
    the class that defines the method), not by the list's first name."""
    params = [nn.Parameter(torch.ones(2))]
    adamw, adam, sgd = torch.optim.AdamW(params), torch.optim.Adam(params), torch.optim.SGD(params, lr=0.1)
    mine = MyOptimizer(params)
    params[0].grad = torch.ones(2)
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        adamw.zero_grad()
        torch.optim.Optimizer.zero_grad(adam)  # unbound: still the optimizer's class
        sgd.zero_grad()
        mine.zero_grad()
        params[0].grad = torch.ones(2)
        adamw.step()
        adam.step()
    assert apis(out) == [
        "torch.optim.AdamW.zero_grad",
        "torch.optim.Adam.zero_grad",
        "torch.optim.SGD.zero_grad",
        "torch.optim.Optimizer.zero_grad",
        "torch.ones",
        "torch.optim.AdamW.step",
        "torch.optim.Adam.step",
    ]
    assert trace_lines(out)[0] == 'torch.optim.AdamW.zero_grad(torch.optim.AdamW([Tensor([2], "float32")]))'


def conv_twice(F_, x, w):
    """Reaches the builtin through a module held in a local: not followed."""
    return F_.conv2d(x, w)


def test_a_function_shared_by_namespaces_is_named_by_the_name_the_program_used(out):
    """torch.nn.functional.conv2d is torch.conv2d (one builtin, patched
    once): a call is named by the attribute chain the calling code loaded it
    through, from a global name, where that is so; else (a local alias, a
    module held in a local) by the list's first name."""
    x, w = torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)
    alias = F.conv2d
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        F.conv2d(x, w)
        torch.conv2d(x, w)
        torch.nn.functional.conv2d(*(x, w))  # CALL_FUNCTION_EX
        F.conv2d(x, w if x is not None else None, stride=1)  # a branch among the arguments
        [F.conv2d(x, F.conv2d(x, w)) for _ in range(1)]  # nested, inside a comprehension
        try:
            F.pixel_shuffle(x, 2)  # another builtin, inside a handler's range
        except RuntimeError:
            pass
        exec("F.conv2d(x, w)", {"F": F, "x": x, "w": w})  # module-level code: LOAD_NAME
        alias(x, w)  # a local alias: which name cannot be known
        conv_twice(F, x, w)
    assert apis(out) == [
        "torch.nn.functional.conv2d",
        "torch.conv2d",
        "torch.nn.functional.conv2d",
        "torch.nn.functional.conv2d",
        "torch.nn.functional.conv2d",
        "torch.nn.functional.conv2d",
        "torch.nn.functional.pixel_shuffle",
        "torch.nn.functional.conv2d",
        "torch.conv2d",
        "torch.conv2d",
    ]


def test_a_name_left_out_leaves_out_the_calls_made_through_it(out):
    x, w = torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)
    with APITracer(output_path=str(out), levels=0, merge_output=True, exclude_apis=["torch.nn.functional.*"]):
        F.conv2d(x, w)
        torch.conv2d(x, w)
    assert apis(out) == ["torch.conv2d"]


# -- model.parameters(): the tensors it will yield


def train(traced_out=None):
    """Three Adam steps of a tiny model, the optimizer given
    model.parameters(); traced at level 0 into `traced_out` where given."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    tracer = APITracer(output_path=str(traced_out), levels=0, merge_output=True) if traced_out else None
    if tracer:
        tracer.start()
    try:
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    finally:
        if tracer:
            tracer.stop()
    return model, opt


def test_an_optimizer_of_model_parameters_is_written_with_its_tensors_and_replays(out):
    from api_tracer.replay import Config, replay_one

    model, opt = train(out)
    line = trace_lines(out)[0]
    assert line == (
        'torch.optim.Adam([Tensor([4, 3], "float32"), Tensor([4], "float32"), Tensor([1, 4], "float32"), '
        'Tensor([1], "float32")], lr=0.01)'
    )
    assert replay_one(Config("x", 1, line)).status == "ok"
    # the optimizer got every parameter, and trained as it does untraced, bit for bit
    assert [p for g in opt.param_groups for p in g["params"]] == list(model.parameters())
    untraced, _ = train()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), untraced.state_dict().values()))
