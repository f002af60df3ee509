"""Every private aten operator of the installed torch is decided by its
family (frameworks/torch/private_operators.py), and each family holds to
its decision: a checked family's wrong sizes or indices are invalid before
the kernel runs, with the check's message, and its right ones replay; a
family whose kernels check was probed with wrong sizes, which raise; a
refused family is refused with its reason. The operators real programs
reach (a mixture of experts' grouped matmul, torch.sparse, histogramdd)
replay from what the tracer wrote."""

from __future__ import annotations

import functools

import pytest
import torch

from api_tracer.frameworks.torch import preconditions
from api_tracer.frameworks.torch import private_operators as private
from api_tracer.frameworks.torch.policy import refusal
from api_tracer.replay import Config, ReplayOptions, run_in_process


def t(*shape: int, dtype: str = "float32") -> str:
    return f'Tensor({list(shape)}, "{dtype}")'


def op(name: str, *args: str) -> str:
    return f"torch.ops.aten.{name}({', '.join(args)})"


# -- one sample per family ----------------------------------------------------------------------------

# Checked families: (a line of wrong sizes or indices, what the check says, a right line and its status:
# "ok", or "failed" for a CUDA kernel this CPU build lacks, having passed the check).
CHECKED = {
    "views by sizes and strides": (
        op("_reshape_alias_copy.default", t(4), "[4]", "[-100000000]"),
        "must all be 0 or more",
        op("_reshape_alias.default", t(6), "[2, 3]", "[3, 1]"),
        "ok",
    ),
    "segment reduction's gradient": (
        op("_segment_reduce_backward.default", t(2), t(2), t(4), '"sum"', 'lengths=Filled(Tensor([2], "int64"), 9)'),
        "lengths must be integers of 0 or more (data has 4 along axis 0)",
        op("_segment_reduce_backward.default", t(2), t(2), t(4), '"sum"', 'lengths=Filled(Tensor([2], "int64"), 2)'),
        "ok",
    ),
    "softmax gradients": (
        op("_softmax_backward_data.default", t(4, 5), t(2, 3), "1", "torch.float32"),
        "grad_output [4, 5] and output [2, 3] must have one shape",
        op("_softmax_backward_data.default", t(4, 5), t(4, 5), "1", "torch.float32"),
        "ok",
    ),
    "CPU flash attention": (
        op("_scaled_dot_product_flash_attention_for_cpu.default", t(1, 2, 3, 4), t(1, 2, 5, 4), t(1, 2, 6, 4)),
        "do not agree",
        op("_scaled_dot_product_flash_attention_for_cpu.default", t(1, 4, 3, 4), t(1, 2, 5, 4), t(1, 2, 5, 4)),
        "ok",
    ),
    "scaled dot product attention's flash form": (
        op("_scaled_dot_product_flash_attention.default", t(1, 3, 8, 16), t(1, 2, 8, 16), t(1, 2, 8, 16)),
        "do not agree",
        op("_scaled_dot_product_flash_attention.default", t(1, 4, 8, 16), t(1, 2, 8, 16), t(1, 2, 8, 16)),
        "failed",
    ),
    "scaled dot product attention's cuDNN and other devices' forms": (
        op(
            "_scaled_dot_product_cudnn_attention.default",
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            t(1, 3, 8, 8),
            "True",
        ),
        "attn_bias [1, 3, 8, 8] must broadcast to [1, 2, 8, 8]",
        op(
            "_scaled_dot_product_cudnn_attention.default",
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            t(1, 1, 8, 8),
            "True",
        ),
        "failed",
    ),
    "scaled dot product attention's memory-efficient form": (
        op(
            "_scaled_dot_product_efficient_attention.default",
            t(1, 4, 8, 16),
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            "None",
            "True",
        ),
        "do not agree",
        op(
            "_scaled_dot_product_efficient_attention.default",
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            t(1, 2, 8, 16),
            "None",
            "True",
        ),
        "failed",
    ),
    "flash attention kernels": (
        op(
            "_flash_attention_forward.default",
            t(6, 2, 8),
            t(6, 2, 8),
            t(6, 2, 8),
            'Filled(Tensor([3], "int32"), 9)',
            'Tensor([3], "int32")',
            "4",
            "4",
            "0.0",
            "False",
            "False",
        ),
        "cum_seq_q [9, 9, 9] must be offsets in order within [0, 6]",
        op(
            "_flash_attention_forward.default",
            t(6, 2, 8),
            t(6, 2, 8),
            t(6, 2, 8),
            'Tensor([3], "int32")',
            'Tensor([3], "int32")',
            "4",
            "4",
            "0.0",
            "False",
            "False",
        ),
        "failed",
    ),
    "memory-efficient attention kernels": (
        op(
            "_efficient_attention_forward.default",
            t(1, 6, 2, 8),
            t(1, 6, 2, 8),
            t(1, 6, 2, 8),
            "None",
            'Tensor([3], "int32")',
            'Tensor([3], "int32")',
            "4",
            "4",
            "0.0",
            "0",
            "False",
            'seqlen_k=Filled(Tensor([2], "int32"), 7)',
        ),
        "seqlen_k must hold 2 key lengths in [0, 6]",
        op(
            "_efficient_attention_forward.default",
            t(1, 6, 2, 8),
            t(1, 6, 2, 8),
            t(1, 6, 2, 8),
            "None",
            'Tensor([3], "int32")',
            'Tensor([3], "int32")',
            "4",
            "4",
            "0.0",
            "0",
            "False",
        ),
        "failed",
    ),
    "grouped matmuls": (
        op(
            "_grouped_mm.default",
            t(8, 16, dtype="bfloat16"),
            t(4, 16, 32, dtype="bfloat16"),
            'Filled(Tensor([4], "int32"), 100)',
        ),
        "offs [100, 100, 100, 100] must be group ends in order within [0, 8] (self's rows)",
        op("_grouped_mm.default", t(8, 16, dtype="bfloat16"), t(4, 16, 32, dtype="bfloat16"), 'Tensor([4], "int32")'),
        "ok",
    ),
    "fused optimizers": (
        op(
            "_fused_adam_.default",
            f"[{t(3)}]",
            f"[{t(1)}]",
            f"[{t(3)}]",
            f"[{t(3)}]",
            "[]",
            f"[{t()}]",
            "lr=0.1",
            "beta1=0.9",
            "beta2=0.999",
            "weight_decay=0.0",
            "eps=1e-08",
            "amsgrad=False",
            "maximize=False",
        ),
        "grads[0] must have self[0]'s shape [3]",
        op(
            "_fused_adam_.default",
            f"[{t(3)}]",
            f"[{t(3)}]",
            f"[{t(3)}]",
            f"[{t(3)}]",
            "[]",
            f"[{t()}]",
            "lr=0.1",
            "beta1=0.9",
            "beta2=0.999",
            "weight_decay=0.0",
            "eps=1e-08",
            "amsgrad=False",
            "maximize=False",
        ),
        "ok",
    ),
    "fused LSTM cells": (
        op("_thnn_fused_lstm_cell.default", t(2, 12), t(2, 12), t(2, 4)),
        "cx must have the shape [2, 3]",
        op("_thnn_fused_lstm_cell.default", t(2, 12), t(2, 12), t(2, 3), t(12), t(12)),
        "failed",
    ),
    "fused GRU cells": (
        op("_thnn_fused_gru_cell_backward.default", t(2, 3), t(2, 9), "True"),
        "workspace must have the shape [2, 15]",
        op("_thnn_fused_gru_cell.default", t(2, 9), t(2, 9), t(2, 3)),
        "failed",
    ),
    "fused RMS norm": (
        op("_fused_rms_norm.default", t(3, 4), "[5]", t(5), "1e-05"),
        "normalized_shape [5] must be the last sizes of input [3, 4]",
        op("_fused_rms_norm.default", t(3, 4), "[4]", t(4), "1e-05"),
        "ok",
    ),
    "embedding bag gradients": (
        op(
            "_embedding_bag_dense_backward.default",
            t(3, 2),
            *[t(3, dtype="int64")] * 4,
            "0",
            "False",
            "0",
            "None",
            "-1",
        ),
        "indices must lie in [0, 0)",
        op(
            "_embedding_bag_dense_backward.default",
            t(3, 2),
            *[t(3, dtype="int64")] * 4,
            "4",
            "False",
            "0",
            "None",
            "-1",
        ),
        "ok",
    ),
    "embedding bag's per-sample weights' gradient": (
        op("_embedding_bag_per_sample_weights_backward.default", t(3, 2), t(4, 5), *[t(3, dtype="int64")] * 3, "0"),
        "grad [3, 2] and weight [4, 5] must be 2-d of one width",
        op("_embedding_bag_per_sample_weights_backward.default", t(3, 2), t(4, 2), *[t(3, dtype="int64")] * 3, "0"),
        "ok",
    ),
    "index_put's implementation": (
        op("_index_put_impl_.default", t(5, 2), '[Filled(Tensor([2], "int64"), 100)]', t(2, 2), "True", "True"),
        "indices[0] must lie in [-5, 5) for dimension 0 of self",
        op("_index_put_impl_.default", t(5, 2), '[Tensor([2], "int64")]', t(2, 2), "True", "True"),
        "ok",
    ),
    "CTC loss": (
        op("_ctc_loss.default", t(5, 1, 3), t(1, 4, dtype="int64"), "[5]", "[9]"),
        "target_lengths must fit the 4 targets",
        op("_ctc_loss.default", t(5, 1, 3), t(1, 2, dtype="int64"), "[5]", "[2]"),
        "ok",
    ),
    "CTC loss's gradient": (
        op("_ctc_loss_backward.default", t(1), t(5, 1, 3), t(1, 2, dtype="int64"), "[5]", "[2]", t(1), t(1, 1, 1), "0"),
        "log_alpha [1, 1, 1] must hold [1, 5, 5]",
        op("_ctc_loss_backward.default", t(1), t(5, 1, 3), t(1, 2, dtype="int64"), "[5]", "[2]", t(1), t(1, 5, 5), "0"),
        "ok",
    ),
    "batch norm's forms": (
        op(
            "_batch_norm_impl_index_backward.default",
            "0",
            t(3, 400),
            t(3, 400),
            t(2),
            t(400),
            t(400),
            t(400),
            t(400),
            "True",
            "1e-05",
            "[True, True, True]",
            t(0),
        ),
        "weight must hold one value per channel of input (400), not 2",
        op("_native_batch_norm_legit.no_stats", t(3, 4), t(4), t(4), "True", "0.1", "1e-05"),
        "ok",
    ),
    "FFT kernels": (
        op("_fft_c2r.default", t(5, 3, 6, dtype="complex64"), "[700000]", "1", "10"),
        "dim [700000] must be distinct dimensions of self, in [0, 3)",
        op("_fft_c2r.default", t(5, 3, 6, dtype="complex64"), "[2]", "1", "10"),
        "ok",
    ),
    "weight norm": (
        op("_weight_norm_interface.default", t(4, 3), t(2, 1), "0"),
        "g must hold one value per slice of v along dim 0 (4)",
        op("_weight_norm_interface.default", t(4, 3), t(4, 1), "0"),
        "ok",
    ),
    "adaptive average pooling's gradient (2-d)": (
        op("_adaptive_avg_pool2d_backward.default", t(1, 5, 8, 8), t(1, 3, 8, 8)),
        "grad_output [1, 5, 8, 8] must have self's [1, 3] before its last 2",
        op("_adaptive_avg_pool2d_backward.default", t(1, 3, 2, 2), t(1, 3, 8, 8)),
        "ok",
    ),
    "adaptive average pooling's gradient (3-d)": (
        op("_adaptive_avg_pool3d_backward.default", t(1, 5, 9, 9, 9), t(1, 3, 8, 8, 8)),
        "must have self's [1, 3] before its last 3",
        op("_adaptive_avg_pool3d_backward.default", t(1, 3, 2, 2, 2), t(1, 3, 8, 8, 8)),
        "ok",
    ),
    "distances' gradients": (
        op("_cdist_backward.default", t(50, 60), t(5, 4), t(6, 4), "2.0", t(5, 6)),
        "grad [50, 60] must have the shape [5, 6]",
        op("_cdist_backward.default", t(5, 6), t(5, 4), t(6, 4), "2.0", t(5, 6)),
        "ok",
    ),
    "cumulative max and min": (
        op("_cummax_helper.default", t(10), t(2), t(2, dtype="int64"), "0"),
        "values must have self's shape [10]",
        op("_cummax_helper.default", t(10), t(10), t(10, dtype="int64"), "0"),
        "ok",
    ),
    "Cholesky solve": (
        op("_cholesky_solve_helper.default", t(5, 2), t(3, 3), "False"),
        "A [3, 3] must be square matrices of self's [5, 2] rows, one batch",
        op("_cholesky_solve_helper.default", t(3, 2), t(3, 3), "False"),
        "ok",
    ),
    "COO row indices to compressed rows": (
        op("_convert_indices_from_coo_to_csr.default", 'Filled(Tensor([2], "int64"), 200)', "3"),
        "self must hold row indices in order within [0, 3)",
        op("_convert_indices_from_coo_to_csr.default", 'Tensor([2], "int64")', "3"),
        "ok",
    ),
    "compressed rows to row indices": (
        op("_convert_indices_from_csr_to_coo.default", 'Filled(Tensor([3], "int64"), 100)', 'Tensor([2], "int64")'),
        "crow_indices must be offsets in order within [0, 2]",
        op("_convert_indices_from_csr_to_coo.default", 'Tensor([3], "int64")', 'Tensor([2], "int64")'),
        "ok",
    ),
    "linear combination": (
        op("_compute_linear_combination.default", t(2, 3), t(4, 9)),
        "coefficients must be 2-d, with one column per slice",
        op("_compute_linear_combination.default", t(2, 3), t(4, 2)),
        "ok",
    ),
    "grid_sample's CPU fallback": (
        op(
            "_grid_sampler_2d_cpu_fallback_backward.default",
            t(1, 1, 2, 2),
            t(1, 1, 3, 3),
            t(1, 4, 4, 2),
            "0",
            "0",
            "False",
        ),
        "grad_output must have the shape [1, 1, 4, 4]",
        op(
            "_grid_sampler_2d_cpu_fallback_backward.default",
            t(1, 1, 4, 4),
            t(1, 1, 3, 3),
            t(1, 4, 4, 2),
            "0",
            "0",
            "False",
        ),
        "ok",
    ),
    "packing padded sequences": (
        op("_pack_padded_sequence.default", t(3, 2, 4), 'Filled(Tensor([2], "int64"), 9)', "False"),
        "lengths must lie in [0, 3], the input's length",
        op("_pack_padded_sequence.default", t(3, 2, 4), 'Filled(Tensor([2], "int64"), 2)', "False"),
        "ok",
    ),
    "gather's sparse gradient": (
        op("_gather_sparse_backward.default", t(3, 3), "1", 'Filled(Tensor([1, 3], "int64"), 100)', t(1, 3)),
        "index must have grad's shape and lie in [0, 3)",
        op("_gather_sparse_backward.default", t(3, 3), "1", 'Tensor([1, 3], "int64")', t(1, 3)),
        "ok",
    ),
    "COO tensors from indices": (
        op(
            "_sparse_coo_tensor_with_dims_and_tensors.default",
            "1",
            "0",
            "[3]",
            'Filled(Tensor([1, 1], "int64"), 100)',
            t(1),
            "dtype=torch.float32",
            "layout=torch.sparse_coo",
        ),
        "indices of dimension 0 must lie in [0, 3)",
        op(
            "_sparse_coo_tensor_with_dims_and_tensors.default",
            "1",
            "0",
            "[3]",
            'Tensor([1, 1], "int64")',
            t(1),
            "dtype=torch.float32",
            "layout=torch.sparse_coo",
        ),
        "ok",
    ),
}

# Families whose kernels check: a call of wrong sizes, which raises ("failed"; a query, "ok").
KERNEL = {
    "shapes, copies and conversions": (op("_unsafe_view.default", t(4), "[100]"), "failed"),
    "softmax": (op("_softmax.default", t(4, 5), "-9", "False"), "failed"),
    "list operators": (f"torch._foreach_add_([{t(2)}], [{t(3)}])", "failed"),
    "elementwise operators and reductions": (op("_add_relu.Tensor", t(3), t(4)), "failed"),
    "matmuls with scales": (op("_int_mm.default", t(16, 8, dtype="int8"), t(16, 8, dtype="int8")), "failed"),
    "distances and embedding bags": (op("_cdist_forward.default", t(5, 5, 2), t(5, 6, 3), "2.0", "None"), "failed"),
    "linear algebra": (op("_linalg_eigvals.default", t(3, 4)), "failed"),
    "pooling and upsampling": (
        op("_upsample_nearest_exact2d_backward.default", t(1, 1, 2, 2), "[4, 4]", "[1, 1, 8, 8]"),
        "failed",
    ),
    "convolution": (
        op(
            "_convolution.default",
            t(1, 3, 8, 8),
            t(4, 5, 3, 3),
            "None",
            "[1, 1]",
            "[0, 0]",
            "[1, 1]",
            "False",
            "[0, 0]",
            "1",
            "False",
            "False",
            "True",
            "True",
        ),
        "failed",
    ),
    "composites of public operators": (
        op("_scaled_dot_product_attention_math.default", t(1, 2, 3, 4), t(1, 2, 5, 4), t(1, 2, 6, 4)),
        "failed",
    ),
    "indexing that checks": (op("_unsafe_index.Tensor", t(5), '[Filled(Tensor([1], "int64"), 100)]'), "failed"),
    "histograms and sampling": (
        op("_histogramdd_from_bin_tensors.default", t(10, 2), f"[{t(4)}]"),
        "failed",
    ),
    "sparse tensors' operators": (
        op(
            "_sparse_sparse_matmul.default",
            'Tensor([3, 3], "float32", layout=torch.sparse_coo, nnz=3)',
            'Tensor([4, 3], "float32", layout=torch.sparse_coo, nnz=3)',
        ),
        "failed",
    ),
    "sparse constructors and validators": (
        op(
            "_sparse_csr_tensor_unsafe.default",
            'Tensor([3], "int64")',
            'Filled(Tensor([2], "int64"), 100)',
            t(2),
            "[2, 2]",
        ),
        "failed",
    ),
    "mixed precision's gradient scaling": (
        op("_amp_update_scale_.default", t(0), t(0, dtype="int32"), t(0), "2.0", "0.5", "10"),
        "failed",
    ),
    "assertions": (op("_assert_tensor_metadata.default", t(3), "[4]"), "failed"),
    "queries": (op("_has_same_storage_numel.default", t(3), t(5)), "ok"),
}

# Refused families: a line, and what the refusal says.
REFUSED = {
    "CUDA, cuDNN, MIOpen and MPS kernels": (op("_fused_dropout.default", t(4), "0.5"), "CUDA, cuDNN, MIOpen or MPS"),
    "nested tensors' internals": (op("_nested_tensor_size.default", t(2)), "replay builds no nested tensor"),
    "nn's inference fast path": (f"torch._transform_bias_rescale_qkv({t(2, 3, 12)}, {t(2)}, 2)", "a short bias"),
    "quantization's internals": (
        op("_make_per_tensor_quantized_tensor.default", t(3, dtype="int8"), "0.1", "0"),
        "scales and zero points",
    ),
    "gradients that trust an index argument": (
        op("_sparse_mask_projection.default", t(2), t(2)),
        "crashed the process",
    ),
    "SobolEngine's state": (f"torch._sobol_engine_initialize_state_({t(2, 3, dtype='int64')}, 2)", "direction numbers"),
    "forward-mode AD's and vmap's internals": (op("_fw_primal.default", t(3), "0"), "forward AD"),
    "TorchScript's builtins": (op("_grad_sum_to_size.default", t(3), "[3]"), "TorchScript's interpreter"),
    "torch's tests' operators": (op("_test_check_tensor.default", t(3)), "torch's own tests"),
    "hooks for other backends": (op("_copy_from.default", t(3), t(3)), "lazy tensors"),
    "process-wide state and output": (op("_print.default", '"1000 configs: 1000 ok"'), "prints"),
}


@functools.lru_cache(maxsize=None)
def replayed(lines: tuple) -> tuple:
    configs = [Config("families.txt", i + 1, line) for i, line in enumerate(lines)]
    return tuple((r.status, r.message) for r in run_in_process(configs, ReplayOptions(), lambda r: None))


def all_lines() -> tuple:
    return tuple(
        [line for wrong, _, right, _ in CHECKED.values() for line in (wrong, right)]
        + [line for line, _ in KERNEL.values()]
        + [line for line, _ in REFUSED.values()]
    )


def outcome(line: str):
    lines = all_lines()
    return replayed(lines)[lines.index(line)]


def test_every_private_aten_operator_is_decided_by_one_family(capsys):
    assert private.undecided() == {}
    assert private.main([]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == len(private.private_operators()) > 400
    assert "_grouped_mm\tchecked\tgrouped matmuls" in listed
    assert "_nested_tensor_size\trefused\tnested tensors' internals" in listed


def test_an_operator_no_family_decides_fails_the_list_and_is_refused(monkeypatch, capsys):
    """What a torch upgrade's new private operator meets: the list names it
    and exits 1 (so CI fails), and the policy refuses it meanwhile."""
    import api_tracer.frameworks.torch.policy as policy

    monkeypatch.setattr(private, "private_operators", lambda: ("_grouped_mm", "_brand_new_kernel"))
    assert private.main(["--undecided"]) == 1
    assert capsys.readouterr().out == "_brand_new_kernel\tundecided\tno family\n"
    assert private.undecided(["_foreach_add", "_sparse_addmm", "_brand_new_kernel"]) == {"_brand_new_kernel": []}
    monkeypatch.setattr(policy, "_aten_names", lambda: frozenset({"_brand_new_kernel"}))
    assert "no family decides yet" in refusal("torch.ops.aten._brand_new_kernel.default")


def test_each_family_states_its_reason_and_its_patterns_hold_operators():
    ops = private.private_operators()
    for family in private.FAMILIES:
        assert family.why and family.patterns, family.name
        assert (family.check is not None) == (family.decision == private.CHECKED), family.name
        stale = [p for p in family.patterns if not any(family.matches(o) and private.decision(o) for o in ops)]
        assert not stale, f"{family.name}: {stale} match no operator of torch {torch.__version__}"
    assert len({f.name for f in private.FAMILIES}) == len(private.FAMILIES)


def operator_of(line: str) -> str:
    """The aten name of the operator a line calls, or binds."""
    api = line.split("(")[0]
    return api.split(".")[3] if api.startswith("torch.ops.") else api.rsplit(".", 1)[1]


def test_every_family_has_its_test():
    assert set(CHECKED) | set(KERNEL) | set(REFUSED) == {f.name for f in private.FAMILIES}
    for names, decision in ((CHECKED, private.CHECKED), (KERNEL, private.KERNEL), (REFUSED, private.REFUSED)):
        assert all(f.decision == decision for f in private.FAMILIES if f.name in names)
    samples = {**{k: v[0] for k, v in CHECKED.items()}, **{k: v[0] for k, v in {**KERNEL, **REFUSED}.items()}}
    assert {name: private.decision(operator_of(line)).name for name, line in samples.items()} == {
        name: name for name in samples
    }


@pytest.mark.parametrize("family", sorted(CHECKED))
def test_a_checked_family_refuses_wrong_sizes_before_the_kernel_and_replays_right_ones(family):
    wrong, says, right, status = CHECKED[family]
    api = wrong.split("(")[0]
    got, message = outcome(wrong)
    assert got == "invalid" and message.startswith(f"{api}: ") and says in message, message
    got, message = outcome(right)
    assert got == status, message
    if status == "failed":  # (passed the check; the kernel is CUDA's)
        assert "CPU" in message, message


@pytest.mark.parametrize("family", sorted(KERNEL))
def test_a_family_whose_kernels_check_raises_on_wrong_sizes(family):
    line, status = KERNEL[family]
    got, message = outcome(line)
    assert got == status, message
    assert "WorkerCrashed" not in message


@pytest.mark.parametrize("family", sorted(REFUSED))
def test_a_refused_family_is_refused_with_its_reason(family):
    line, says = REFUSED[family]
    got, message = outcome(line)
    assert got == "refused" and says in message and "--allow-unsafe" in message, message


# -- the checks' contracts -----------------------------------------------------------------------------


def checked(api: str, *args, **kwargs):
    """What replay's check says of calling `api` (an aten operator's
    overload, or a Python function) on these arguments; None: nothing."""
    func = functools.reduce(getattr, api.split(".")[1:], torch)
    return preconditions.check_call(api, func, list(args), kwargs)


def ints(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32)


def test_grouped_mm_offsets_are_group_ends_within_what_they_split():
    """offs splits self's rows (2-d by 3-d), mat2's columns (3-d by 2-d) or
    the contraction (both 2-d): one end per group, in order, within it."""
    mm, r = "torch.ops.aten._grouped_mm.default", torch.randn
    a, b = r(8, 16), r(4, 16, 32)
    assert checked(mm, a, b, ints(2, 4, 6, 8)) is None
    assert checked(mm, a, b, ints(0, 0, 3, 5)) is None  # (empty groups, rows past the last end: a sentinel's)
    assert "within [0, 8] (self's rows)" in checked(mm, a, b, ints(2, 4, 6, 9))
    assert "group ends in order" in checked(mm, a, b, ints(4, 2, 6, 8))
    assert "one end per group: 4, not 3" in checked(mm, a, b, ints(2, 4, 8))
    assert checked(mm, r(4, 8, 16), r(16, 32), ints(8, 16, 24, 32)) is None
    assert "(mat2's columns)" in checked(mm, r(4, 8, 16), r(16, 32), ints(8, 16, 24, 33))
    assert checked(mm, r(8, 20), r(20, 32), ints(5, 20)) is None
    assert "(the contraction)" in checked(mm, r(8, 20), r(20, 32), ints(5, 21))
    assert "must agree on the contraction" in checked(mm, r(8, 20), r(21, 32), ints(5, 20))
    assert "must be None" in checked(mm, r(4, 8, 16), r(4, 16, 32), ints(8, 16, 24, 32))
    assert "a 1-d integer tensor" in checked(mm, a, b, None)
    # torch.nn.functional.grouped_mm hands its arguments to the operator as they are (level 1 records it)
    why = checked("torch.nn.functional.grouped_mm", a, b, offs=ints(2, 4, 6, 80))
    assert why.startswith("torch.nn.functional.grouped_mm: offs [2, 4, 6, 80]"), why
    assert checked("torch.nn.functional.grouped_mm", a, b, offs=ints(2, 4, 6, 8)) is None


def test_packed_attention_reads_each_sequence_within_its_offsets():
    """Flash and memory-efficient attention on packed sequences: offsets
    in order within the packed length, as many for query as for key, none
    longer than the maximum given; seqlen_k within the keys."""
    fa, ea, r = (
        "torch.ops.aten._flash_attention_forward.default",
        "torch.ops.aten._efficient_attention_forward.default",
        torch.randn,
    )
    q, k = r(10, 4, 8), r(12, 2, 8)
    good = (q, k, k, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.0, False, False)
    assert checked(fa, *good) is None
    assert "max_q=5 must be at least the longest sequence of cum_seq_q (6)" in checked(fa, *good[:5], 5, *good[6:])
    assert "cum_seq_k [0, 5, 13] must be offsets in order within [0, 12]" in checked(
        fa, *good[:4], ints(0, 5, 13), *good[5:]
    )
    assert "as many offsets" in checked(fa, *good[:4], ints(0, 6, 12, 12), *good[5:])
    assert "given together" in checked(fa, *good[:4], None, *good[5:])
    assert "seqused_k must hold 2 key lengths in [0, 7]" in checked(fa, *good, seqused_k=ints(3, 9))
    assert "block_table" in checked(
        fa, r(2, 4, 4, 8), r(2, 4, 2, 8), r(2, 4, 2, 8), None, None, 4, 4, 0.0, False, False, block_table=ints(0)
    )
    backward = "torch.ops.aten._flash_attention_backward.default"
    out, lse, seed = r(10, 4, 8), r(4, 10), torch.zeros(2, dtype=torch.int64)
    assert (
        checked(backward, out, q, k, k, out, lse, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.1, False, seed, seed) is None
    )
    assert "logsumexp must have the shape [4, 10]" in checked(
        backward, out, q, k, k, out, r(4, 9), ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.0, False, seed, seed
    )
    assert "rng_state must hold the random state the forward made (16 bytes" in checked(
        backward, out, q, k, k, out, lse, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.1, False, torch.zeros(0), seed
    )
    q4, k4 = r(1, 10, 2, 8), r(1, 12, 2, 8)
    assert checked(ea, q4, k4, k4, None, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.0, 0) is None
    assert "the batch must be 1" in checked(
        ea, r(2, 10, 2, 8), r(2, 12, 2, 8), r(2, 12, 2, 8), None, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.0, 0
    )
    assert "seqlen_k must hold 2 key lengths in [0, 12]" in checked(
        ea, q4, k4, k4, None, ints(0, 4, 10), ints(0, 5, 12), 6, 7, 0.0, 0, seqlen_k=ints(3, 13)
    )
    assert "bias [1, 2, 10, 7] must broadcast to [1, 2, 10, 12]" in checked(
        ea, q4, k4, k4, r(1, 2, 10, 7), None, None, None, None, 0.0, 0
    )


def test_attention_backwards_take_the_forward_s_shapes():
    bwd, r = "torch.ops.aten._scaled_dot_product_flash_attention_backward.default", torch.randn
    q, k, seed = r(1, 4, 8, 16), r(1, 2, 6, 16), torch.zeros(2, dtype=torch.int64)
    good = [r(1, 4, 8, 16), q, k, k, r(1, 4, 8, 16), r(1, 4, 8), None, None, 8, 6, 0.0, False, seed, seed]
    assert checked(bwd, *good) is None
    for i, value, says in (
        (5, r(1, 4, 7), "logsumexp must have the shape [1, 4, 8]"),
        (0, r(1, 4, 8, 8), "grad_out must have the shape [1, 4, 8, 16]"),
        (8, 9, "max_q=9 must be the length 8 of query"),
        (6, ints(0, 8), "cum_seq_q must be None"),
    ):
        assert says in checked(bwd, *good[:i], value, *good[i + 1 :])
    dropout = good[:10] + [0.1, False, torch.zeros((), dtype=torch.int64), seed]  # (a cuDNN forward's seed)
    assert "philox_seed must hold the random state the forward made (16 bytes" in checked(bwd, *dropout)
    zero = torch.zeros((), dtype=torch.int64)
    cudnn = "torch.ops.aten._scaled_dot_product_cudnn_attention_backward.default"
    assert checked(cudnn, *good[:6], zero, zero, None, ints(), ints(), 8, 6, 0.1, False) is None
    eff = "torch.ops.aten._scaled_dot_product_efficient_attention_backward.default"
    q = r(1, 2, 8, 16)
    lse = r(1, 2, 32)  # (rounded up to 32 rows on CUDA)
    assert checked(eff, q, q, q, q, None, q, lse, seed, seed, 0.0, [True, True, True, False]) is None
    assert "logsumexp" in checked(eff, q, q, q, q, None, q, r(1, 2, 7), seed, seed, 0.0, [True, True, True, False])


def test_the_masked_softmax_gradient_reads_output_at_grad_output_s_shape():
    """Its kernel checks grad_output against the mask only (probed: an output
    of another shape was read as grad_output's)."""
    masked, r = "torch.ops.aten._masked_softmax_backward.default", torch.randn
    mask = torch.ones(2, 3, dtype=torch.bool)
    assert "grad_output [2, 3] and output [1, 3] must have one shape" in checked(masked, r(2, 3), r(1, 3), mask, 1)
    assert checked(masked, r(2, 3), r(2, 3), mask, 1) is None


def test_fused_optimizers_and_coo_constructors_take_what_they_trust():
    adam = "torch.ops.aten._fused_adam_.default"
    p, steps = [torch.randn(3), torch.randn(4, 16)], [torch.tensor(1.0), torch.tensor(1.0)]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    states = [torch.zeros(3), torch.zeros(4, 16)]
    assert checked(adam, p, states, states, states, [], steps, **kw) is None
    transposed = [states[0], torch.zeros(16, 4).t()]  # (dense: a parameter's layout, which its states share)
    assert checked(adam, p, transposed, transposed, transposed, [], steps, **kw) is None
    assert "grads[1] must be dense" in checked(
        adam, p, [states[0], torch.zeros(4, 32)[:, ::2]], states, states, [], steps, **kw
    )
    assert "must be dense" in checked(adam, p, [torch.zeros(1).expand(3), states[1]], states, states, [], steps, **kw)
    assert "state_steps must hold a 1-element tensor per parameter (2)" in checked(
        adam, p, states, states, states, [], steps[:1], **kw
    )
    assert "max_exp_avg_sqs must hold one tensor per parameter (2) or none" in checked(
        adam, p, states, states, states, states[:1], steps, **kw
    )
    coo = "torch.ops.aten._sparse_coo_tensor_with_dims_and_tensors.default"
    indices = torch.tensor([[2, 0, 1], [0, 4, 3]])
    assert checked(coo, 2, 0, [3, 5], indices, torch.randn(3)) is None
    assert "indices of dimension 1 must lie in [0, 4)" in checked(coo, 2, 0, [3, 4], indices, torch.randn(3))
    assert "is_coalesced=True needs indices in order" in checked(
        coo, 2, 0, [3, 5], indices, torch.randn(3), is_coalesced=True
    )
    assert "values must be (nnz=3, [2])" in checked(coo, 2, 1, [3, 5, 2], indices, torch.randn(3, 3))
    unsafe = "torch.ops.aten._sparse_coo_tensor_unsafe.default"
    assert "indices of dimension 0 must lie in [0, 2)" in checked(unsafe, indices, torch.randn(3), [2, 5])


# -- what real programs reach --------------------------------------------------------------------------


def traced(tmp_path, level: int, step, **options):
    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file
    from api_tracer.formats.summaries import read_value_ranges

    out = tmp_path / f"level{level}"
    with APITracer(output_path=str(out), levels=level, merge_output=True, **options):
        step()
    configs = read_config_file(str(out / "api_configs.yaml"))
    ranges = read_value_ranges(str(out / "api_value_ranges.yaml"))
    results = run_in_process(configs, ReplayOptions(ranges=ranges), lambda r: None)
    return {r.config: (r.status, r.message) for r in results}


def test_a_mixture_of_experts_replays_at_levels_2_and_3(tmp_path):
    """A Mixtral-style model's experts run as torch.nn.functional.grouped_mm:
    6 lines of aten._grouped_mm at level 2 were invalid, refused unreviewed;
    they replay now, drawn from their value profiles (offsets in order)."""
    pytest.importorskip("transformers")
    from support.workloads import mixtral_training_step

    step = mixtral_training_step()
    step()
    for level in (2, 3):
        results = traced(tmp_path, level, step, value_ranges=True)
        grouped = [line for line in results if line.startswith("torch.ops.aten._grouped_mm.")]
        assert len(grouped) >= 2, sorted(results)
        assert [(line, s, m) for line, (s, m) in results.items() if s != "ok"] == []


def test_what_a_signal_workload_and_histogramdd_reach_replays(tmp_path):
    """torch.sparse_coo_tensor, torch.sparse.addmm and histogramdd by edges
    reach aten._sparse_coo_tensor_with_dims_and_tensors, aten._sparse_addmm
    and aten._histogramdd_from_bin_tensors at level 2: each replays."""
    x = torch.randn(32, 8)

    def step():
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2, 3], [5, 9, 20, 31]]), torch.randn(4), (4, 32))
        torch.sparse.addmm(torch.randn(4, 8), s, x)
        torch.histogramdd(torch.randn(50, 2), [torch.linspace(-2, 2, 5), torch.linspace(-1, 1, 3)])

    with torch.sparse.check_sparse_tensor_invariants():
        results = traced(tmp_path, 2, step, value_ranges=True)
    apis = {line.split("(")[0] for line in results}
    assert {
        "torch.ops.aten._sparse_coo_tensor_with_dims_and_tensors.default",
        "torch.ops.aten._sparse_addmm.default",
        "torch.ops.aten._histogramdd_from_bin_tensors.default",
    } <= apis, apis
    assert [(line, s, m) for line, (s, m) in results.items() if s != "ok"] == []
