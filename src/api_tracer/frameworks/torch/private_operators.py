"""Every private aten operator (`aten::_...`) of the installed torch,
decided by family: the one table replay's policy (policy.py) and checks
(preconditions.py) read, and the list this module prints.

A private operator's kernel often trusts its arguments (the public
operator that calls it checked them first), so replay calls one only
once its family is decided, by the rule replay applies to views and
indices:

- checked: replay checks the built arguments first (operator_checks.py,
  fused_checks.py), as the public caller or the meta function would, and
  a config that fails is invalid, with what is wrong;
- kernel checks: the kernel (or the public operators a composite calls)
  checks what it reads: each such family was probed on CPU with
  arguments of wrong sizes, which raise (tests/replay/test_private_operators.py);
- refused: with the family's reason (kernels this CPU build cannot run or
  probe, internals of other subsystems, index arguments no check is
  written for, ...).

    python -m api_tracer.frameworks.torch.private_operators [--undecided]

prints each private aten operator with its family and decision, and
exits 1 naming those no family decides (or two do): a torch upgrade's
new operators, which replay refuses until a family takes them (a test
runs it). Operators of `_`-prefixed namespaces (`_quantized`) are not
aten's: the policy refuses them as a whole.
"""

from __future__ import annotations

import functools
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from . import fused_checks as fused
from . import index_checks
from . import operator_checks as checks
from .operator_families import CHECKED, KERNEL, REFUSED, Family, Review, checked, kernel, refused

__all__ = ["CHECKED", "KERNEL", "REFUSED", "Family", "FAMILIES", "decision", "families_of", "undecided", "main"]

CUDA_ONLY = (
    "kernels of CUDA, cuDNN, MIOpen or MPS only (or of their libraries: cuSPARSELt, Triton): this CPU build "
    "can neither read their checks nor probe them, so replay refuses them until they are reviewed on such a device"
)

# the family of operators that exist to raise: their errors are no defect (raises_by_design)
ASSERTIONS = "assertions"

FAMILIES: Tuple[Family, ...] = (
    # -- checked: replay checks the built arguments first -----------------------------------------
    checked(
        "views by sizes and strides",
        checks.view_of_self,
        "they read the window their sizes and strides give of self's storage: it must lie inside it",
        "_reshape_alias _reshape_alias_copy",
    ),
    checked(
        "segment reduction's gradient",
        index_checks.segment_reduce_backward,
        "it reads data and the gradient by the lengths or offsets (segment_reduce's, indexing_operators.py), "
        "one gradient value per segment",
        "_segment_reduce_backward",
    ),
    checked(
        "softmax gradients",
        checks.softmax_backward,
        "the kernels read output and grad_output as one shape, along a dim they take as given (the "
        "masked one checks grad_output against its mask only)",
        "_softmax_backward_data _log_softmax_backward_data _masked_softmax_backward",
    ),
    checked(
        "CPU flash attention",
        fused.attention(grouped=True, exact_logsumexp=True),
        "what scaled_dot_product_attention runs on CPU: the kernels index query, key, value and their "
        "backward's tensors by each other's sizes",
        "_scaled_dot_product_flash_attention_for_cpu*",
    ),
    checked(
        "scaled dot product attention's flash form",
        fused.attention(grouped=True, seed_bytes=16),
        "what scaled_dot_product_attention runs on CUDA: (batch, heads, length, head dim) tensors the kernels "
        "index by each other's sizes, and the random state the forward made",
        "_scaled_dot_product_flash_attention _scaled_dot_product_flash_attention_backward",
    ),
    checked(
        "scaled dot product attention's cuDNN and other devices' forms",
        fused.attention(grouped=True),
        "what scaled_dot_product_attention runs with cuDNN and on other devices: as the flash form",
        "_scaled_dot_product_cudnn_attention* _cudnn_attention_* _scaled_dot_product_fused_attention_overrideable*",
    ),
    checked(
        "scaled dot product attention's memory-efficient form",
        fused.attention(grouped=False),
        "as the fused forms, with as many key heads as query heads (its kernel takes no grouped query)",
        "_scaled_dot_product_efficient_attention*",
    ),
    checked(
        "flash attention kernels",
        fused.flash_attention,
        "the CUDA kernels the fused forms and nested tensors call, on (batch, length, heads, head dim) or "
        "packed sequences: they read each sequence at cum_seq_q and cum_seq_k unchecked",
        "_flash_attention_*",
    ),
    checked(
        "memory-efficient attention kernels",
        fused.efficient_attention,
        "the CUDA kernels of the memory-efficient form: they read each sequence at cu_seqlens_q and "
        "cu_seqlens_k, and seqlen_k, unchecked",
        "_efficient_attention_*",
    ),
    checked(
        "grouped matmuls",
        fused.grouped_mm,
        "a mixture of experts' expert layers (torch.nn.functional.grouped_mm): the CUDA kernels split by "
        "offs, the groups' cumulative ends, unchecked",
        "_grouped_mm _scaled_grouped_mm*",
    ),
    checked(
        "fused optimizers",
        fused.fused_optimizer,
        "torch.optim's fused=True steps: the kernels walk each parameter's values and read its gradient's "
        "and states' at the same places, unchecked",
        "_fused_adam* _fused_sgd* _fused_adagrad*",
    ),
    checked(
        "fused LSTM cells",
        checks.fused_rnn_cell(4),
        "nn.LSTMCell's CUDA kernels: they index the gates, state and workspace by each other's sizes",
        "_thnn_fused_lstm_cell*",
    ),
    checked(
        "fused GRU cells",
        checks.fused_rnn_cell(3),
        "nn.GRUCell's CUDA kernels: they index the gates, state and workspace by each other's sizes",
        "_thnn_fused_gru_cell*",
    ),
    checked(
        "fused RMS norm",
        checks.rms_norm,
        "torch.nn.functional.rms_norm's kernels (nn.RMSNorm): weight and the saved rstd indexed by the "
        "normalized shape and the rows before it",
        "_fused_rms_norm*",
    ),
    checked(
        "embedding bag gradients",
        checks.embedding_bag_backward,
        "they write the rows indices name and read grad's rows offset2bag names, unchecked",
        "_embedding_bag_backward _embedding_bag_dense_backward",
    ),
    checked(
        "embedding bag's per-sample weights' gradient",
        checks.embedding_bag_weights_backward,
        "it reads weight's rows indices name and grad's rows offset2bag names, unchecked",
        "_embedding_bag_per_sample_weights_backward",
    ),
    checked(
        "index_put's implementation",
        checks.index_put,
        "Tensor.index_put_ and indexing assignment (a Swin model's relative position index): its `unsafe` "
        "skips the bounds checks",
        "_index_put_impl*",
    ),
    checked(
        "CTC loss",
        checks.ctc_loss,
        "what ctc_loss calls: it reads log_probs at the targets and lengths given",
        "_ctc_loss",
    ),
    checked(
        "CTC loss's gradient",
        checks.ctc_loss_backward,
        "it reads log_probs and the forward's log_alpha at the targets and lengths given",
        "_ctc_loss_backward",
    ),
    checked(
        "batch norm's forms",
        checks.batch_norm,
        "the CPU kernels index each per-channel tensor by the input's channels, unchecked",
        "_batch_norm_* _native_batch_norm_legit*",
    ),
    checked(
        "FFT kernels",
        checks.fft,
        "what the fft functions call: they take dim already wrapped (one out of range crashed the process)",
        "_fft_*",
    ),
    checked(
        "weight norm",
        checks.weight_norm,
        "torch.nn.utils' weight norm: the fused kernels read g and write a norm per slice of v, unchecked",
        "_weight_norm*",
    ),
    checked(
        "adaptive average pooling's gradient (2-d)",
        checks.pooling_backward(2),
        "it reads grad_output at each batch and channel of self, unchecked",
        "_adaptive_avg_pool2d_backward",
    ),
    checked(
        "adaptive average pooling's gradient (3-d)",
        checks.pooling_backward(3),
        "it reads grad_output at each batch and channel of self, unchecked",
        "_adaptive_avg_pool3d_backward",
    ),
    checked(
        "distances' gradients",
        checks.distance_backward,
        "cdist's and pdist's: grad and the forward's result read at x1's and x2's sizes, unchecked",
        "_cdist_backward _pdist_backward",
    ),
    checked(
        "cumulative max and min",
        checks.cumulative_helper,
        "what cummax and cummin call: they write values and indices at self's sizes, unchecked",
        "_cummax_helper _cummin_helper",
    ),
    checked(
        "Cholesky solve",
        checks.cholesky_solve_helper,
        "what cholesky_solve calls: LAPACK on the sizes of self and A as given",
        "_cholesky_solve_helper",
    ),
    checked(
        "COO row indices to compressed rows",
        checks.coo_to_csr,
        "it writes up to each row index given (one past the size crashed the process)",
        "_convert_indices_from_coo_to_csr",
    ),
    checked(
        "compressed rows to row indices",
        checks.csr_to_coo,
        "it writes each row's index between the offsets given (ones past the columns crashed the process)",
        "_convert_indices_from_csr_to_coo",
    ),
    checked(
        "linear combination",
        checks.linear_combination,
        "what matrix_exp calls: it reads input's slices by coefficients' columns, unchecked",
        "_compute_linear_combination",
    ),
    checked(
        "grid_sample's CPU fallback",
        checks.grid_sampler,
        "its gradient reads grad_output at grid's sizes, unchecked",
        "_grid_sampler_2d_cpu_fallback*",
    ),
    checked(
        "packing padded sequences",
        checks.pack_padded_sequence,
        "torch.nn.utils.rnn.pack_padded_sequence: lengths past the input make batch sizes its data does "
        "not hold, which the recurrent layers then read",
        "_pack_padded_sequence",
    ),
    checked(
        "gather's sparse gradient",
        checks.gather_sparse_backward,
        "it makes a sparse tensor at index's values without checking them",
        "_gather_sparse_backward",
    ),
    checked(
        "COO tensors from indices",
        checks.sparse_coo,
        "torch.sparse_coo_tensor's inner constructors: they skip the checks of indices against the size, "
        "even under check_sparse_tensor_invariants",
        "_sparse_coo_tensor_with_dims_and_tensors _sparse_coo_tensor_unsafe",
    ),
    # -- kernel checks: probed with wrong sizes on CPU --------------------------------------------
    kernel(
        "shapes, copies and conversions",
        "their kernels (or the public operators they call) check sizes and element counts",
        "_to_copy _to_cpu _cast_* _autocast_to_* _lazy_clone _local_scalar_dense _unsafe_view "
        "_reshape_copy _reshape_from_tensor _shape_as_tensor _dim_arange _stack _chunk_cat "
        "_efficientzerotensor _conj _conj_physical _conj_copy _neg_view _neg_view_copy",
    ),
    kernel(
        "softmax",
        "the kernels check dim, and the masked one its mask against the input; a composite (_safe_softmax) "
        "calls public operators",
        "_softmax _log_softmax _safe_softmax _masked_softmax",
    ),
    kernel(
        "list operators",
        "the optimizers' foreach steps: the lists' lengths are checked, each pair by the operator it falls back to",
        "_foreach_*",
    ),
    kernel(
        "elementwise operators and reductions",
        "TensorIterator broadcasts and checks their shapes; dims are wrapped and checked",
        "_add_relu* _addmm_activation _aminmax _logcumsumexp _unique _unique2 _prelu_kernel* "
        "_is_all_true _is_any_true _trilinear",
    ),
    kernel(
        "matmuls with scales",
        "float8 and int8 matmuls: the kernels check shapes, scales and bias",
        "_scaled_mm _scaled_mm_v2 _int_mm",
    ),
    kernel(
        "distances and embedding bags",
        "the kernels check shapes and the indices against the weight; composites call public operators",
        "_cdist_forward _pdist_forward _euclidean_dist _embedding_bag _embedding_bag_forward_only "
        "_embedding_bag_sparse_backward",
    ),
    kernel(
        "linear algebra",
        "linalg's kernels check their matrices' shapes",
        "_linalg_det _linalg_eigh _linalg_eigvals _linalg_slogdet _linalg_solve_ex _linalg_svd _lu_with_info",
    ),
    kernel(
        "pooling and upsampling",
        "their meta functions (shared by CPU and CUDA) check input, output and gradient sizes",
        "_adaptive_avg_pool2d _adaptive_avg_pool3d _upsample_*",
    ),
    kernel(
        "convolution",
        "convolution's shape checks run in each of these (and NNPACK's and the slow kernels' own)",
        "_convolution _convolution_mode _convolution_double_backward _slow_conv2d_* _nnpack_spatial_convolution",
    ),
    kernel(
        "composites of public operators",
        "made of public operators, which check what they read: attention's math, padding, recurrent cells' "
        "double backward, packed sequences' padding and gradient",
        "_scaled_dot_product_attention_math _pad_circular _pad_enum _thnn_differentiable_* "
        "_pack_padded_sequence_backward _pad_packed_sequence",
    ),
    kernel(
        "indexing that checks",
        "`unsafe` in name only: they call index and index_put, which check the bounds, or clamp the indices",
        "_unsafe_index _unsafe_index_put _unsafe_masked_index*",
    ),
    kernel(
        "histograms and sampling",
        "histogramdd's: the kernels check the edges' count, dims and dtype (edges out of order only move "
        "values between bins: the search stays within them); torch.distributions' samplers and their "
        "gradients (TensorIterator checks the shapes)",
        "_histogramdd_* _standard_gamma* _sample_dirichlet _dirichlet_grad",
    ),
    kernel(
        "sparse tensors' operators",
        "their sparse arguments are checked as replay builds them (check_sparse_tensor_invariants); the "
        "kernels check layouts, dims and shapes",
        "_sparse_mm _sparse_mm_reduce_impl _sparse_addmm _sparse_sum _sparse_csr_sum _sparse_csr_prod "
        "_sparse_softmax _sparse_log_softmax _sparse_sparse_matmul _sparse_broadcast_to* _spdiags "
        "_to_sparse _to_sparse_csr _to_sparse_csc _to_sparse_bsr _to_sparse_bsc _to_dense _coalesce "
        "_coalesced* _indices* _values* _nnz _dimI _dimV",
    ),
    kernel(
        "sparse constructors and validators",
        "they validate indices against sizes under check_sparse_tensor_invariants, which replay turns on",
        "_sparse_compressed_tensor_unsafe _sparse_csr_tensor_unsafe _sparse_csc_tensor_unsafe "
        "_sparse_bsr_tensor_unsafe _sparse_bsc_tensor_unsafe _sparse_compressed_tensor_with_dims "
        "_sparse_coo_tensor_with_dims _validate_*",
    ),
    kernel(
        "mixed precision's gradient scaling",
        "torch.amp.GradScaler's steps: the kernels check that scale, growth tracker and found_inf hold one value",
        "_amp_*",
    ),
    kernel(
        ASSERTIONS,
        "they check their argument and raise: their errors are what they are for (_linalg_check_errors reads "
        "each value of LAPACK's info, and calls a negative one a bug of its caller's)",
        "_assert_* _functional_assert_* _functional_sym_constrain_range* _make_dep_token _linalg_check_errors",
    ),
    kernel(
        "queries",
        "they read a tensor's own metadata or the build's capabilities, not the data sizes point to",
        "_version _backward _is_zerotensor _has_same_storage_numel _has_compatible_shallow_copy_type "
        "_debug_has_internal_overlap _nnpack_available _fused_sdp_choice _use_cudnn_rnn_flatten_weight "
        "_cufft_get_plan_cache_*",
    ),
    # -- refused, each family with its reason ---------------------------------------------------------
    refused(
        "CUDA, cuDNN, MIOpen and MPS kernels",
        CUDA_ONLY,
        "_cudnn_ctc_loss _cudnn_init_dropout_state _cudnn_rnn* _use_cudnn_ctc_loss _use_miopen_ctc_loss "
        "_mps_* _lstm_mps _scaled_dot_product_attention_math_for_mps _conv_depthwise2d "
        "_fused_dropout _masked_scale _fill_mem_eff_dropout_mask_ _cslt_* _sparse_semi_structured_* "
        "_to_sparse_semi_structured _mixed_dtypes_linear _triton_* _spsolve _pin_memory _philox_* "
        "_weight_int4pack_mm _weight_int4pack_mm_with_scales_and_zeros _convert_weight_to_int4pack",
    ),
    refused(
        "nested tensors' internals",
        "nested and jagged tensors' offsets, sizes and strides tensors, which their kernels read as given; "
        "replay builds no nested tensor",
        "_nested_* _jagged_to_padded_dense_forward _padded_dense_to_jagged_forward",
    ),
    refused(
        "nn's inference fast path",
        "the fused kernels nn.MultiheadAttention and nn.TransformerEncoderLayer run in evaluation without "
        "grad: they index by a bias and head count they take as given (a short bias was read past); no "
        "check written",
        "_native_multi_head_attention _transformer_encoder_layer_fwd _transform_bias_rescale_qkv",
    ),
    refused(
        "quantization's internals",
        "packed weights, scales and zero points per channel or group, observers' state: the kernels index "
        "them by sizes they take as given; replay calls quantization through its public operators",
        "_fake_quantize_* _fused_moving_avg_obs_fq_helper* _choose_qparams_per_tensor "
        "_make_per_*_quantized_tensor _empty_*affine_quantized _saturate_weight_to_fp16 _wrapped_* "
        "_weight_int8pack_mm _weight_int4pack_mm_for_cpu _convert_weight_to_int4pack_for_cpu "
        "_dyn_quant_* _rowwise_prune",
    ),
    refused(
        "gradients that trust an index argument",
        "they read the gradient at the output's indices (sparse softmax and sum, mask projection) or at "
        "arg_out: a config's tensors need not share them, and one crashed the process; no check written",
        "_sparse_softmax_backward_data _sparse_log_softmax_backward_data _sparse_sum_backward "
        "_sparse_mask_projection _sparse_mm_reduce_impl_backward",
    ),
    refused(
        "SobolEngine's state",
        "torch.quasirandom.SobolEngine's steps: they index torch's table of direction numbers by the "
        "dimension given, which only SobolEngine checks",
        "_sobol_engine_*",
    ),
    refused(
        "forward-mode AD's and vmap's internals",
        "dual tensors and batch dimensions exist only inside torch.func's and forward AD's levels",
        "_make_dual* _unpack_dual _fw_primal* _new_zeros_with_same_feature_meta _add_batch_dim _remove_batch_dim",
    ),
    refused(
        "TorchScript's builtins",
        "operators of TorchScript's interpreter (lists, optionals, tracing state, nn.init's no-grad helpers), "
        "not computations a program makes",
        "_set_item _list_to_tensor _tensor_to_list _infer_size _size_if_not_equal _unwrap_optional "
        "_ncf_* _get_tracing_state _get_cpu_capability _pack_sequence _grad_sum_to_size _no_grad_*",
    ),
    refused(
        "torch's tests' operators",
        "they exist for torch's own tests",
        "_test_* _foobar",
    ),
    refused(
        "hooks for other backends",
        "copies and layouts of lazy tensors, XLA, oneDNN's opaque tensors and out= resizing: no CPU tensor "
        "replay builds reaches them",
        "_copy_from* _propagate_xla_data _resize_output* _mkldnn_*",
    ),
    refused(
        "process-wide state and output",
        "they print or change cuFFT's plan cache: policy.py's DENIED refuses them by name, for that reason",
        "_print _cufft_set_plan_cache_max_size _cufft_clear_plan_cache",
    ),
)


@functools.lru_cache(maxsize=None)
def private_operators() -> Tuple[str, ...]:
    """The private aten operators of the installed torch, by name."""
    import torch

    names = {s.name.partition("::")[2] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::_")}
    return tuple(sorted(n for n in names if not n.startswith("__")))


REVIEW = Review("private aten operators", FAMILIES, lambda: private_operators())  # (looked up when called)


def families_of(op: str) -> List[Family]:
    """The families whose patterns match `op` (an aten name: "_grouped_mm")."""
    return REVIEW.families_of(op)


def decision(op: str) -> Optional[Family]:
    """The family that decides the private aten operator `op`; None where
    none does, or two do."""
    return REVIEW.decision(op)


def raises_by_design(op: str) -> bool:
    """Whether the private aten operator `op` exists to raise (ASSERTIONS):
    an error it raises, however worded, is its purpose."""
    family = decision(op)
    return family is not None and family.name == ASSERTIONS


def undecided(ops: Sequence[str] = ()) -> Dict[str, List[str]]:
    """Per operator of `ops` (default: every private aten operator) that
    no family or more than one decides, the names of those that match."""
    return REVIEW.undecided(ops)


def main(argv: Optional[List[str]] = None) -> int:
    return REVIEW.main("python -m api_tracer.frameworks.torch.private_operators", argv)


if __name__ == "__main__":
    sys.exit(main())
