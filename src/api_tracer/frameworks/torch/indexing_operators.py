"""Every public aten operator that takes indices, lengths, offsets or
saved statistics (an input argument named in ARGUMENTS), decided by
family (operator_families.py): the table replay's policy (policy.py) and
checks (preconditions.py) read, and the list this module prints.

These are the arguments that autograd and the public functions make
consistent with the others (a max pooling's indices come from its forward,
a layer norm's mean from its own): backward kernels and the fast paths
they feed often read where such values point without looking, so a config
file, whose values its value profile draws, could make them read or write
out of bounds. Each family is checked by replay first, or was probed with
values out of range, which its kernel refuses (tests/replay/
test_indexing_operators.py), or is refused with its reason.

    python -m api_tracer.frameworks.torch.indexing_operators [--undecided]

lists them (and exits 1 naming operators no family decides: a torch
upgrade's, which the policy refuses until one does).
"""

from __future__ import annotations

import functools
import sys
from typing import List, Optional, Tuple

from . import index_checks as checks
from . import operator_checks
from .operator_families import Family, Review, checked, kernel, refused
from .private_operators import CUDA_ONLY

# Input arguments that hold indices, lengths, offsets or statistics another
# call made (argument names of aten's schemas).
ARGUMENTS = frozenset(
    """indices index offsets lengths target targets input_lengths target_lengths batch_sizes pivots LU_pivots
    is_target sorter repeats compressed_indices crow_indices col_indices ccol_indices row_indices
    mean rstd invstd save_mean save_invstd save_var running_mean running_var running_min running_max
    total_weight count counts per_sample_weights random_samples reserve""".split()
)

FAMILIES: Tuple[Family, ...] = (
    # -- checked: replay checks the built arguments first -----------------------------------------
    checked(
        "max pooling gradients",
        checks.max_pool_indices(2),
        "they write each gradient at the input position its index names (the forward's argmax)",
        "max_pool2d_with_indices_backward adaptive_max_pool2d_backward",
    ),
    checked(
        "3-d max pooling gradients",
        checks.max_pool_indices(3),
        "they write each gradient at the input position its index names (the forward's argmax)",
        "max_pool3d_with_indices_backward adaptive_max_pool3d_backward",
    ),
    checked(
        "embedding gradients",
        checks.embedding_backward,
        "they add each gradient row at the weight row its index names",
        "embedding_backward embedding_dense_backward embedding_sparse_backward",
    ),
    checked(
        "segment reductions",
        checks.segment_reduce,
        "they read data at the segments the lengths or offsets give (unchecked with unsafe=True)",
        "segment_reduce",
    ),
    checked(
        "layer norm's gradient",
        checks.layer_norm_backward,
        "it reads the forward's mean and rstd at each row of the input",
        "native_layer_norm_backward",
    ),
    checked(
        "batch norm",
        operator_checks.batch_norm,
        "its CPU kernels read the running and saved statistics at each channel",
        "native_batch_norm native_batch_norm_backward batch_norm_backward",
    ),
    checked(
        "CTC loss",
        operator_checks.ctc_loss,
        "it reads log_probs at the targets' classes and the lengths' positions",
        "ctc_loss",
    ),
    checked(
        "fused observers of fake quantization",
        checks.fake_quant_observer,
        "they read and write the running statistics, scale and zero point at each channel",
        "fused_moving_avg_obs_fake_quant",
    ),
    checked(
        "recurrent networks over packed sequences",
        checks.packed_sequence,
        "they read data in steps of batch_sizes rows, and the state at those rows",
        "lstm gru rnn_tanh rnn_relu",
    ),
    # -- kernel checks: probed with values out of range, which raise ---------------------------------
    kernel(
        "indexing, gathers and scatters",
        "their kernels check each index against the size it indexes (take_along_dim wraps it)",
        "gather gather_backward scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ "
        "index index_put index_put_ index_add index_add_ index_copy index_copy_ index_fill index_fill_ "
        "index_reduce index_reduce_ index_select index_select_backward put put_ take take_along_dim "
        "embedding embedding_renorm embedding_renorm_ embedding_bag cummaxmin_backward "
        "value_selecting_reduction_backward max_unpool2d max_unpool3d",
    ),
    kernel(
        "fractional max pooling",
        "its kernels check the indices (an internal assert) and the random samples' shape",
        "fractional_max_pool2d fractional_max_pool3d fractional_max_pool2d_backward fractional_max_pool3d_backward",
    ),
    kernel(
        "losses over class targets",
        "their kernels check each target class (nll, margins) or the target's shape (elementwise losses)",
        "nll_loss* multi_margin_loss* multilabel_margin_loss* cross_entropy_loss binary_cross_entropy* "
        "cosine_embedding_loss hinge_embedding_loss huber_loss* kl_div l1_loss margin_ranking_loss mse_loss* "
        "poisson_nll_loss smooth_l1_loss* soft_margin_loss*",
    ),
    kernel(
        "LU and LDL pivots",
        "their kernels check each pivot against the matrix's size",
        "lu_unpack lu_solve linalg_lu_solve linalg_ldl_solve",
    ),
    kernel(
        "batch and instance norm's composites",
        "they check the weight, bias and running statistics against the input's channels first",
        "batch_norm instance_norm",
    ),
    kernel(
        "group norm's gradient",
        "its kernel checks mean and rstd against the batch and groups, and the sizes against the input",
        "native_group_norm_backward",
    ),
    kernel(
        "sorted lookups and repeats",
        "their kernels check the sorter's indices and the repeats' signs",
        "searchsorted bucketize repeat_interleave",
    ),
    kernel(
        "sampling and elementwise uses",
        "the argument is read elementwise (broadcast against the others, sizes checked): a distribution's "
        "parameter, a mask",
        "normal binomial",
    ),
    kernel(
        "sparse constructors",
        "replay makes sparse tensors under check_sparse_tensor_invariants, which checks their indices",
        "sparse_coo_tensor sparse_compressed_tensor sparse_csr_tensor sparse_csc_tensor sparse_bsr_tensor "
        "sparse_bsc_tensor",
    ),
    # -- refused --------------------------------------------------------------------------------------
    refused(
        "CUDA batch norm statistics",
        CUDA_ONLY,
        "cudnn_batch_norm miopen_batch_norm batch_norm_elemt batch_norm_gather_stats* batch_norm_backward_reduce "
        "batch_norm_backward_elemt "
        "batch_norm_update_stats cudnn_batch_norm_backward miopen_batch_norm_backward miopen_ctc_loss "
        "miopen_rnn_backward",
    ),
    refused(
        "quantized recurrent networks and batch norm",
        "their kernels (fbgemm) read packed weights and statistics no check here is written for",
        "quantized_lstm quantized_gru quantized_batch_norm",
    ),
)


@functools.lru_cache(maxsize=None)
def indexing_operators() -> Tuple[str, ...]:
    """The public aten operators of the installed torch with an input
    argument named in ARGUMENTS."""
    import torch

    found = set()
    for s in torch._C._jit_get_all_schemas():
        namespace, _, op = s.name.partition("::")
        if namespace != "aten" or op.startswith("_"):
            continue
        if any(a.name in ARGUMENTS and "Tensor" in str(a.type) and not a.is_out for a in s.arguments):
            found.add(op)
    return tuple(sorted(found))


REVIEW = Review(
    "public aten operators taking indices, lengths, offsets or statistics", FAMILIES, lambda: indexing_operators()
)  # (looked up when called)


def decision(op: str) -> Optional[Family]:
    """The family that decides `op` (a public aten name: "segment_reduce");
    None where none does, or two do."""
    return REVIEW.decision(op)


def main(argv: Optional[List[str]] = None) -> int:
    return REVIEW.main("python -m api_tracer.frameworks.torch.indexing_operators", argv)


if __name__ == "__main__":
    sys.exit(main())
