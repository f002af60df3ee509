"""Every public aten operator that takes indices, lengths, offsets or
saved statistics is decided by its family
(frameworks/torch/indexing_operators.py), and each family holds to its
decision, replayed in worker processes (a check that let a wrong value
through would crash a worker, not this test): a checked family's values out
of range are invalid before the kernel runs, and its right ones replay; a
family whose kernels check raises on values out of range; a refused family
is refused with its reason. Backward kernels of this class crashed replay
(segment_reduce, embedding and max pooling gradients, layer norm's
gradient, the fused fake-quant observer, quantized embedding bags); what a
real program's training step reaches of them replays."""

from __future__ import annotations

import functools

import pytest
import torch

from api_tracer.frameworks.torch import indexing_operators as indexing
from api_tracer.frameworks.torch.operator_families import CHECKED as IS_CHECKED
from api_tracer.frameworks.torch.operator_families import KERNEL as IS_KERNEL
from api_tracer.frameworks.torch.operator_families import REFUSED as IS_REFUSED
from api_tracer.replay import Config, ReplayOptions
from api_tracer.replay.run import run_isolated


def t(*shape: int, dtype: str = "float32") -> str:
    return f'Tensor({list(shape)}, "{dtype}")'


def filled(value: int, *shape: int, dtype: str = "int64") -> str:
    return f"Filled({t(*shape, dtype=dtype)}, {value})"


def op(name: str, *args: str) -> str:
    return f"torch.ops.aten.{name}({', '.join(args)})"


def max_pool2d_backward(indices: str) -> str:
    return op(
        "max_pool2d_with_indices_backward.default",
        t(1, 1, 2, 2),
        t(1, 1, 4, 4),
        "[2, 2]",
        "[2, 2]",
        "[0, 0]",
        "[1, 1]",
        "False",
        indices,
    )


def layer_norm_backward(stats: str) -> str:
    return op(
        "native_layer_norm_backward.default", t(4, 8), t(4, 8), "[8]", stats, stats, t(8), t(8), "[True, True, True]"
    )


def observer(running: int) -> str:
    return (
        f"torch.fused_moving_avg_obs_fake_quant({t(64, 128)}, {t(1, dtype='int32')}, {t(1, dtype='int32')}, "
        f"{t(running)}, {t(running)}, {t(64)}, {t(64, dtype='int32')}, 0.01, 0, 255, 0, True, False)"
    )


def packed_lstm(batch_sizes: str) -> str:
    hx = f"[{t(1, 3, 5)}, {t(1, 3, 5)}]"
    params = f"[{t(20, 4)}, {t(20, 5)}, {t(20)}, {t(20)}]"
    return op("lstm.data", t(6, 4), batch_sizes, hx, params, "True", "1", "0.0", "False", "False")


def quantized_bag(mapping: int) -> str:
    return (
        f"torch.ops.quantized.embedding_bag_byte_rowwise_offsets.default({t(10, 16, dtype='uint8')}, "
        f"{filled(1, 4)}, {filled(0, 1)}, False, 0, True, None, {filled(mapping, 3, dtype='int32')}, False)"
    )


# Checked families: (a line of values out of range, what the check says, a right line).
CHECKED = {
    "max pooling gradients": (
        max_pool2d_backward(filled(40, 1, 1, 2, 2)),
        "indices must be positions in [0, 16)",
        max_pool2d_backward(filled(3, 1, 1, 2, 2)),
    ),
    "3-d max pooling gradients": (
        op("adaptive_max_pool3d_backward.default", t(1, 1, 1, 2, 2), t(1, 1, 2, 4, 4), filled(400000, 1, 1, 1, 2, 2)),
        "indices must be positions in [0, 32)",
        op("adaptive_max_pool3d_backward.default", t(1, 1, 1, 2, 2), t(1, 1, 2, 4, 4), filled(5, 1, 1, 1, 2, 2)),
    ),
    "embedding gradients": (
        op("embedding_dense_backward.default", t(3, 5), filled(-1, 3), "4", "-1", "True"),
        "indices must be weight rows in [0, 4)",
        op("embedding_dense_backward.default", t(3, 5), filled(3, 3), "4", "-1", "True"),
    ),
    "segment reductions": (
        f'torch.segment_reduce({t(4)}, "sum", lengths={filled(100000000, 2)}, unsafe=True)',
        "lengths must be integers of 0 or more",
        f'torch.segment_reduce({t(4)}, "sum", lengths={filled(2, 2)}, unsafe=True)',
    ),
    "layer norm's gradient": (
        layer_norm_backward(t(1)),
        "mean must hold one value per row of input (4)",
        layer_norm_backward(t(4, 1)),
    ),
    "batch norm": (
        op("native_batch_norm.default", t(2, 4, 3), "None", "None", t(3), t(3), "False", "0.1", "1e-05"),
        "running_mean must hold one value per channel of input (4)",
        op("native_batch_norm.default", t(2, 4, 3), "None", "None", t(4), t(4), "False", "0.1", "1e-05"),
    ),
    "CTC loss": (
        op("ctc_loss.IntList", t(5, 2, 4), filled(9, 2, 3), "[5, 5]", "[3, 3]"),
        "targets and blank must be classes in [0, 4)",
        op("ctc_loss.IntList", t(5, 2, 4), filled(1, 2, 3), "[5, 5]", "[3, 3]"),
    ),
    "fused observers of fake quantization": (
        observer(1),
        "running_min must hold one value per channel (64)",
        observer(64),
    ),
    "recurrent networks over packed sequences": (
        packed_lstm(filled(100, 3)),
        "batch_sizes must add up to data's 6 rows",
        packed_lstm(filled(3, 2)),
    ),
}

# Families whose kernels check: a line of values out of range, which raises.
KERNEL = {
    "indexing, gathers and scatters": op("gather.default", t(4, 4), "1", filled(100000, 4, 2)),
    "fractional max pooling": op(
        "fractional_max_pool2d_backward.default",
        t(1, 1, 2, 2),
        t(1, 1, 4, 4),
        "[2, 2]",
        "[2, 2]",
        filled(40, 1, 1, 2, 2),
    ),
    "losses over class targets": op("nll_loss_forward.default", t(2, 4), filled(100000, 2), "None", "1", "-100"),
    "LU and LDL pivots": op("lu_unpack.default", t(3, 3), filled(100000, 3, dtype="int32")),
    "batch and instance norm's composites": op(
        "batch_norm.default", t(2, 4, 3), "None", "None", t(3), t(3), "False", "0.1", "1e-05", "False"
    ),
    "group norm's gradient": op(
        "native_group_norm_backward.default",
        t(2, 4, 8),
        t(2, 4, 8),
        t(1),
        t(1),
        t(4),
        "2",
        "4",
        "8",
        "2",
        "[True, True, True]",
    ),
    "sorted lookups and repeats": op("searchsorted.Tensor", t(5), t(3), f"sorter={filled(100000, 5)}"),
    "sampling and elementwise uses": op("normal.Tensor_Tensor", t(3), t(4)),
    "sparse constructors": f"torch.sparse_coo_tensor({filled(9, 1, 2)}, {t(2)}, [4])",
}

# Refused families: a line, and what the refusal says.
REFUSED = {
    "CUDA batch norm statistics": (
        op("batch_norm_elemt.default", t(2, 4, 3), "None", "None", t(4), t(4), "0.001"),
        "CUDA, cuDNN, MIOpen or MPS",
    ),
    "quantized recurrent networks and batch norm": (
        op("quantized_batch_norm.default", t(2, 4, 3), "None", "None", t(4), t(4), "0.001", "0.1", "0"),
        "packed weights",
    ),
}


@functools.lru_cache(maxsize=None)
def replayed() -> dict:
    lines = [
        *(line for wrong, _, right in CHECKED.values() for line in (wrong, right)),
        *KERNEL.values(),
        *(line for line, _ in REFUSED.values()),
        quantized_bag(100000),
        quantized_bag(2),
    ]
    configs = [Config("families.txt", i + 1, line) for i, line in enumerate(lines)]
    results = run_isolated(configs, 2, ReplayOptions(), lambda r: None, timeout=60)
    return {r.config: (r.status.value, f"{r.error}: {r.message}") for r in results}


def test_every_operator_of_the_class_is_decided_by_one_family(capsys):
    assert indexing.REVIEW.undecided() == {}
    assert indexing.main([]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(indexing.indexing_operators()) > 100
    assert "segment_reduce\tchecked\tsegment reductions" in listed
    for family in indexing.FAMILIES:
        assert family.why and family.patterns and (family.check is not None) == (family.decision == IS_CHECKED)
        stale = [p for p in family.patterns if not any(family.matches(o) for o in indexing.indexing_operators())]
        assert not stale, f"{family.name}: {stale} match no operator of torch {torch.__version__}"


def test_a_new_operator_of_the_class_is_refused_until_a_family_decides_it(monkeypatch):
    from api_tracer.frameworks.torch.policy import refusal

    monkeypatch.setattr(indexing, "indexing_operators", lambda: ("gather", "brand_new_gather"))
    assert indexing.REVIEW.undecided() == {"brand_new_gather": []}
    assert "no family decides it yet" in refusal("torch.ops.aten.brand_new_gather.default")
    assert refusal("torch.ops.aten.gather.default") is None


def test_every_family_has_its_test():
    assert set(CHECKED) | set(KERNEL) | set(REFUSED) == {f.name for f in indexing.FAMILIES}
    for names, decision in ((CHECKED, IS_CHECKED), (KERNEL, IS_KERNEL), (REFUSED, IS_REFUSED)):
        assert all(f.decision == decision for f in indexing.FAMILIES if f.name in names)


@pytest.mark.parametrize("family", sorted(CHECKED))
def test_a_checked_family_refuses_values_out_of_range_and_replays_right_ones(family):
    wrong, says, right = CHECKED[family]
    status, message = replayed()[wrong]
    assert status == "invalid" and f"{wrong.split('(')[0]}: " in message and says in message, message
    assert replayed()[right][0] == "ok", replayed()[right]


@pytest.mark.parametrize("family", sorted(KERNEL))
def test_a_family_whose_kernels_check_raises_on_values_out_of_range(family):
    status, message = replayed()[KERNEL[family]]
    assert status == "failed" and "WorkerCrashed" not in message, message


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_a_refused_family_is_refused_with_its_reason(family):
    line, says = REFUSED[family]
    status, message = replayed()[line]
    assert status == "refused" and says in message and "--allow-unsafe" in message, message


def test_a_quantized_embedding_bag_reads_rows_its_mapping_holds():
    status, message = replayed()[quantized_bag(100000)]
    assert status == "invalid" and "compressed_indices_mapping must hold rows of weight in [0, 10)" in message
    assert replayed()[quantized_bag(2)][0] == "ok"


def test_what_a_training_step_reaches_of_the_class_replays(tmp_path):
    """Max pooling with indices, an embedding, layer norm, a packed LSTM and
    segment_reduce, trained one step at level 2: each of their backward
    operators (the class's) replays from what the tracer wrote."""
    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file
    from api_tracer.formats.summaries import read_value_ranges

    torch.manual_seed(0)
    embedding, norm, lstm = torch.nn.Embedding(10, 6), torch.nn.LayerNorm(6), torch.nn.LSTM(6, 5)
    image, tokens = torch.randn(2, 3, 8, 8, requires_grad=True), torch.tensor([[1, 4, 2], [7, 0, 9]])

    def step():
        pooled = torch.nn.functional.max_pool2d(image, 2) + torch.nn.functional.adaptive_max_pool2d(image, 4)
        x = norm(embedding(tokens))
        packed = torch.nn.utils.rnn.pack_padded_sequence(x.transpose(0, 1), [3, 2])
        out, _ = lstm(packed)
        lengths = torch.tensor([2, 2])
        seg = torch.segment_reduce(pooled.reshape(-1)[:4], "sum", lengths=lengths)
        (pooled.sum() + out.data.sum() + seg.sum()).backward()

    out = tmp_path / "trace"
    with APITracer(output_path=str(out), levels=2, merge_output=True, value_ranges=True):
        step()
    configs = read_config_file(str(out / "api_configs.yaml"))
    reached = {c.text.split("(")[0].split(".")[3] for c in configs if c.text.startswith("torch.ops.aten.")}
    assert {
        "max_pool2d_with_indices_backward",
        "adaptive_max_pool2d_backward",
        "embedding_dense_backward",
        "native_layer_norm_backward",
        "segment_reduce",
    } <= reached, sorted(reached)
    options = ReplayOptions(ranges=read_value_ranges(str(out / "api_value_ranges.yaml")))
    results = run_isolated(configs, 2, options, lambda r: None, timeout=60)
    assert [(r.config, r.status.value, r.message) for r in results if r.status.value not in ("ok", "skipped")] == []
