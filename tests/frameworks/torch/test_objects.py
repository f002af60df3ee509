"""torch's own modules and optimizers are written as the constructor calls
that rebuild them equal (api_tracer/frameworks/torch/objects.py): for every module class of
torch.nn and every optimizer of torch.optim, built with each optional
argument changed in turn, the written value, read back and built by
replay's builder, is an object equal to the original. The classes that do
not come back are listed, with the reason, and checked not to."""

import pytest
import torch
from torch import nn

from api_tracer import format_call, parse_call
from api_tracer.frameworks.torch.objects import same_module, same_optimizer, signatures
from api_tracer.replay import Invalid, Refused, Skip, replay_framework


def rebuilt(obj):
    """`obj` written as a config value, read back and built as replay builds
    it (the policy asked first); raises Skip for a placeholder, Refused where
    the policy refuses it."""
    line = format_call("f", obj)
    _, args, kwargs = parse_call(line)
    torch_replay = replay_framework("torch")
    builder = torch_replay.builder(torch_replay, "cpu", {}, torch.Generator().manual_seed(0), line)
    builder.check_names(args, kwargs)
    return builder.build(args[0], "args[0]")


def value(v):
    return v() if callable(v) and not isinstance(v, type) else v


# -- modules -------------------------------------------------------------------

# Required arguments, by parameter name; by class where the name says too little.
REQUIRED = {
    "in_features": 4,
    "out_features": 3,
    "in1_features": 2,
    "in2_features": 3,
    "n_classes": 6,
    "cutoffs": [2, 4],
    "output_size": 2,
    "kernel_size": 2,
    "num_features": 4,
    "groups": 2,
    "padding": 1,
    "value": 0.5,
    "in_channels": 4,
    "out_channels": 6,
    "size": 3,
    "num_embeddings": 10,
    "embedding_dim": 4,
    "input_size": 4,
    "hidden_size": 6,
    "num_groups": 2,
    "num_channels": 4,
    "norm_type": 2.0,
    "normalized_shape": 4,
    "num_classes": 5,
    "embed_dim": 8,
    "num_heads": 2,
    "upscale_factor": 2,
    "downscale_factor": 2,
    "mode": "LSTM",
    "bias": True,
    "num_chunks": 4,
    "threshold": 0.1,
    "num_layers": 2,
    "d_model": 8,
    "nhead": 2,
    "dim": 1,
    "unflattened_size": (2, 2),
    "module": lambda: nn.Linear(2, 2),
}
CLASS_REQUIRED = {
    "Fold": dict(output_size=(4, 4), kernel_size=2),
    "TransformerDecoder": dict(decoder_layer=lambda: nn.TransformerDecoderLayer(8, 2, 16), num_layers=2),
    "TransformerEncoder": dict(encoder_layer=lambda: nn.TransformerEncoderLayer(8, 2, 16), num_layers=2),
}
# The containers, from their children.
CONTAINERS = {
    "Sequential": lambda: nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.25))),
    "ModuleList": lambda: nn.ModuleList([nn.Conv1d(2, 2, 3), nn.LSTM(2, 4, batch_first=True)]),
    "ModuleDict": lambda: nn.ModuleDict({"act": nn.GELU(approximate="tanh"), "norm": nn.LayerNorm(4)}),
}
# An optional argument changed: a flag flipped, a number moved; by name where
# its default (a string, None) does not say to what.
CHANGED = {
    "reduction": "sum",
    "padding_mode": "reflect",
    "nonlinearity": "relu",
    "approximate": "tanh",
    "activation": "gelu",
    "mode": "max",
    "padding_idx": 1,
    "max_norm": 1.0,
    "kdim": 4,
    "vdim": 4,
    "dim": 1,
    "stride": 1,
    "eps": 1e-3,
    "weight": lambda: torch.ones(3),
    "pos_weight": lambda: torch.ones(3),
    "scale_factor": 2.0,
    "beta": 0.5,
    "divisor_override": 2,
    "output_size": 2,
    "output_ratio": 0.5,
    "foreach": True,
    "fused": True,
    "max_eval": 10,
}


def changed(p):
    """Another value for the optional parameter `p` (None: none to try)."""
    d = p.default
    if p.name in ("device", "dtype"):
        return None
    if isinstance(d, bool):
        return not d
    if isinstance(d, int):
        return d + 1
    if isinstance(d, float):
        return d / 2 if d else 0.25
    if isinstance(d, tuple) and d and all(isinstance(x, float) for x in d):
        return tuple(x / 2 for x in d)
    if isinstance(d, str) or d is None:
        return value(CHANGED.get(p.name))
    return None


def variants(cls):
    """(what differs, the module) for each module of `cls` that builds: with
    the required arguments only, then each optional one changed, then (where
    it takes one) dtype=torch.float64."""
    name = cls.__name__
    if name in CONTAINERS:
        yield "children", CONTAINERS[name]()
        return
    params = signatures(cls)[0]
    table = CLASS_REQUIRED.get(name, REQUIRED)
    required = {p.name: value(table[p.name]) for p in params if p.default is p.empty}
    extras = [{}] + [{p.name: changed(p)} for p in params if p.default is not p.empty and changed(p) is not None]
    if any(p.name == "dtype" for p in params):
        extras.append({"dtype": torch.float64})
    for extra in extras:
        try:
            module = cls(**required, **extra)
        except Exception:  # noqa: BLE001 - a combination the class refuses
            continue
        yield ", ".join(f"{k}={v!r}" for k, v in extra.items()) or "defaults", module


# The classes that do not come back, and why: the variants that do not (None:
# none does).
NOT_REBUILT = {
    "AdaptiveLogSoftmaxWithLoss": (None, "keeps its cutoffs with n_classes appended"),
    "LinearCrossEntropyLoss": (None, "keeps no in_features"),
    "PairwiseDistance": ({"p=1.0"}, "keeps p as norm"),
    "RNNCellBase": (None, "keeps no num_chunks (the cells' base class, not one to build)"),
    "SyncBatchNorm": (None, "replay's policy refuses it: it talks to other processes"),
    "Transformer": (
        {
            "num_encoder_layers=7",
            "num_decoder_layers=7",
            "dim_feedforward=2049",
            "dropout=0.05",
            "layer_norm_eps=5e-06",
        },
        "keeps none of these: they are its layers' arguments",
    ),
    "TransformerDecoder": (None, "keeps copies of decoder_layer, not it"),
    "TransformerDecoderLayer": (None, "keeps no d_model, nhead, dim_feedforward, dropout"),
    "TransformerEncoder": (None, "keeps copies of encoder_layer, not it"),
    "TransformerEncoderLayer": (None, "keeps no d_model, nhead, dim_feedforward, dropout"),
}
MODULE_CLASSES = sorted(
    name
    for name, obj in vars(nn).items()
    if isinstance(obj, type) and issubclass(obj, nn.Module) and obj is not nn.Module
)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", MODULE_CLASSES)
def test_every_torch_nn_module_comes_back_equal(name):
    made = list(variants(getattr(nn, name)))
    assert made, f"no {name} could be built: give its required arguments in REQUIRED or CLASS_REQUIRED"
    not_back = set()
    for what, module in made:
        try:
            if not same_module(rebuilt(module), module):
                not_back.add(what)
        except (Skip, Refused, Invalid):  # a placeholder, refused, or not a value replay reads
            not_back.add(what)
    expected, why = NOT_REBUILT.get(name, (set(), ""))
    assert not_back == (expected if expected is not None else {what for what, _ in made}), why


def test_module_calls_read_back_what_was_passed():
    def written(m):
        return format_call("f", m)[2:-1]

    assert (
        written(nn.LSTM(4, 8, num_layers=2, batch_first=True)) == "torch.nn.LSTM(4, 8, num_layers=2, batch_first=True)"
    )
    assert written(nn.RNN(3, 5, nonlinearity="relu")) == 'torch.nn.RNN(3, 5, nonlinearity="relu")'
    assert written(nn.Linear(3, 4, dtype=torch.float64)) == "torch.nn.Linear(3, 4, dtype=torch.float64)"
    assert written(nn.MultiheadAttention(8, 2, bias=False)) == "torch.nn.MultiheadAttention(8, 2, bias=False)"
    assert (
        written(nn.FractionalMaxPool2d(2, output_size=3)) == "torch.nn.FractionalMaxPool2d((2, 2), output_size=(3, 3))"
    )
    assert (
        written(nn.CrossEntropyLoss(weight=torch.ones(3), ignore_index=-1))
        == 'torch.nn.CrossEntropyLoss(weight=Tensor([3], "float32"), ignore_index=-1)'
    )
    # what others set on a module after it was built is not the constructor's
    tagged = nn.Linear(3, 4)
    tagged._is_hf_initialized = True  # as transformers does
    assert written(tagged) == "torch.nn.Linear(3, 4)"
    # a container whose children are named is not the call of its children
    named = nn.Sequential(__import__("collections").OrderedDict(fc=nn.Linear(2, 2)))
    assert written(named) == 'Module("torch.nn.Sequential")'
    # a container's children have dtypes of their own, a module's parameters one
    assert (
        written(nn.Sequential(nn.Linear(2, 2).double()))
        == "torch.nn.Sequential(torch.nn.Linear(2, 2, dtype=torch.float64))"
    )
    mixed = nn.Linear(2, 2)
    mixed.bias = nn.Parameter(torch.zeros(2, dtype=torch.float64))
    assert written(mixed) == 'Module("torch.nn.Linear")'


class Net(nn.Linear):
    """A module of the program's own."""


def test_a_module_of_the_programs_own_stays_a_placeholder_and_replay_says_why():
    from api_tracer.replay import Config, replay_one

    assert format_call("f", Net(2, 2)) == 'f(Module("test_objects.Net"))'
    r = replay_one(Config("x", 1, 'torch.nn.Linear.forward(Module("mypkg.Net"), Tensor([2], "float32"))'))
    assert r.status == "skipped"
    assert r.message == (
        "args[0] is Module(\"mypkg.Net\"), a module of the program's own: only torch.nn's modules "
        "are written as their constructor calls, it cannot be rebuilt"
    )
    r = replay_one(Config("x", 1, 'torch.nn.Transformer.forward(Module("torch.nn.Transformer"))'))
    assert r.message == (
        'args[0] is Module("torch.nn.Transformer"): the tracer could not read this torch.nn '
        "module's constructor arguments back, it cannot be rebuilt"
    )


# -- optimizers ----------------------------------------------------------------


def optimizer_variants(cls):
    """(what differs, the optimizer): defaults, each optional argument
    changed, two parameter groups, a scheduler's initial_lr in the group."""

    def params():
        return [nn.Parameter(torch.randn(3, 2)), nn.Parameter(torch.randn(4, 3))]

    made = [("defaults", lambda: cls(params()))]
    for p in signatures(cls)[0][1:]:
        new = changed(p)
        if new is not None:
            made.append((f"{p.name}={new!r}", lambda p=p, new=new: cls(params(), **{p.name: new})))
    made.append(("groups", lambda: cls([{"params": params()[:1]}, {"params": params()[1:], "lr": 0.5}])))
    made.append(("scheduler", lambda: torch.optim.lr_scheduler.StepLR(cls(params()), 2).optimizer))
    for what, make in made:
        try:
            yield what, make()
        except Exception:  # noqa: BLE001 - a combination the class refuses
            continue


OPTIMIZERS = sorted(
    name
    for name, obj in vars(torch.optim).items()
    if isinstance(obj, type) and issubclass(obj, torch.optim.Optimizer) and obj is not torch.optim.Optimizer
)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_torch_optim_optimizer_comes_back_equal(name):
    made = list(optimizer_variants(getattr(torch.optim, name)))
    assert len(made) >= 4
    for what, optimizer in made:
        assert same_optimizer(rebuilt(optimizer), optimizer), what


def test_optimizers_are_written_with_the_arguments_their_constructor_takes():
    params = [nn.Parameter(torch.randn(3, 2))]
    adamw = torch.optim.AdamW(params, lr=0.01)
    assert adamw.defaults["decoupled_weight_decay"] is True  # kept by Adam's code, refused by AdamW's constructor
    assert format_call("f", adamw) == 'f(torch.optim.AdamW([Tensor([3, 2], "float32")], lr=0.01))'
    torch.optim.lr_scheduler.StepLR(adamw, 2)
    assert (
        format_call("f", adamw)
        == 'f(torch.optim.AdamW([{"params": [Tensor([3, 2], "float32")], "initial_lr": 0.01}], lr=0.01))'
    )

    class Mine(torch.optim.SGD):
        pass

    assert format_call("f", Mine(params)).startswith('f(Opaque("')


@pytest.mark.parametrize("level", [0, 1])
def test_torch_dataclasses_and_cxx_enums_are_written_as_what_builds_them(tmp_path, level):
    """An options dataclass of torch's (torch.nn.LinearCrossEntropyOptions)
    and a member of an enum torch defines in C++ (ScalingType) were written
    Opaque(...): they are the constructor call and the member, which replay
    builds, and which trace back to the same line."""
    import torch.nn.functional as F

    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file
    from api_tracer.replay import ReplayOptions, roundtrip, run_in_process

    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=4, chunking_method="auto")
    a = torch.randn(16, 16).to(torch.float8_e4m3fn)
    b = torch.randn(16, 16).to(torch.float8_e4m3fn).t()
    one = torch.ones(())
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True):
        F.linear_cross_entropy(torch.randn(4, 8), torch.randn(10, 8), torch.randint(0, 10, (4,)), options=options)
        F.scaled_mm(a, b, one, F.ScalingType.TensorWise, one, F.ScalingType.TensorWise)
    # (level 1 sees scaled_mm as the call it makes, torch._scaled_mm_v2, the enum's values as ints)
    scaled = "torch.nn.functional.scaled_mm" if level == 0 else "torch._scaled_mm_v2"
    configs = [
        c
        for c in read_config_file(str(tmp_path / "api_configs.yaml"))
        if c.text.startswith(("torch.nn.functional.linear_cross_entropy", scaled))
    ]
    [lce] = [c for c in configs if c.text.startswith("torch.nn.functional.linear_cross_entropy")]
    [mm] = [c for c in configs if c.text.startswith(scaled)]
    assert (
        "options=torch.nn.LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=4, "
        'chunking_method="auto", acc_policy="auto", acc_dtype=None)' in lce.text
    )
    assert mm.text.count("torch.nn.functional.ScalingType.TensorWise") == (2 if level == 0 else 0)
    assert [r.status for r in run_in_process(configs, ReplayOptions(), lambda r: None)] == ["ok", "ok"]
    assert [why for _, why in roundtrip(configs, level)] == ["", ""]


@pytest.mark.parametrize("level", [2, 3])
def test_operators_torch_registers_from_python_replay(tmp_path, level):
    """Chunked, linear_cross_entropy calls torch.ops.torch_nn's operators,
    which torch.nn registers from Python when the module is imported: the
    tracer records them, so replay allows them (importing that module to
    resolve them), and they trace back as the same line."""
    import torch.nn.functional as F

    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file
    from api_tracer.replay import ReplayOptions, roundtrip, run_in_process

    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True):
        F.linear_cross_entropy(torch.randn(4, 8), torch.randn(10, 8), torch.randint(0, 10, (4,)), options=options)
    configs = [
        c for c in read_config_file(str(tmp_path / "api_configs.yaml")) if c.text.startswith("torch.ops.torch_nn.")
    ]
    assert len(configs) == 1
    assert [(r.status, r.message) for r in run_in_process(configs, ReplayOptions(), lambda r: None)] == [("ok", "")]
    assert [why for _, why in roundtrip(configs, level)] == [""]
