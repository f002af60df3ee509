"""Indices of ties (frameworks/torch/ties.py): where torch leaves open
which of equal elements an index output names, a check compares an index
by the value it names. Torch's sorts, top-k, medians and arg-maxima of a
stride-0 tensor (every row one value repeated) are judged right by
--check layout and --check float64, and say so; an index naming another
value is still a mismatch."""

import pytest

from api_tracer.replay import Config, ReplayOptions, run_in_process

X = 'Tensor([4, 64], "float32", stride=[1, 0])'  # (each row one value, 64 times: ties everywhere)
TIED = [
    f"torch.ops.aten.sort.default({X})",
    f"torch.ops.aten.sort.default({X}, 1, True)",
    f"torch.sort({X}, dim=1)",
    f"torch.Tensor.sort({X}, 1)",
    f"torch.ops.aten.argsort.default({X}, 1)",
    f"torch.ops.aten.topk.default({X}, 5)",
    f"torch.ops.aten.kthvalue.default({X}, 3, 1)",
    f"torch.ops.aten.mode.default({X}, 1)",
    f"torch.ops.aten.max.dim({X}, 1)",
    f"torch.ops.aten.min.dim({X}, 1, True)",
    f"torch.ops.aten.cummax.default({X}, 1)",
    f"torch.ops.aten.argmax.default({X})",
    f"torch.max({X}, 1)",
]


def results(lines, check, imports=()):
    configs = [Config("ties", i + 1, line) for i, line in enumerate(lines)]
    return run_in_process(configs, ReplayOptions(check=check, imports=imports), lambda r: None)


@pytest.mark.parametrize("check", ["layout", "float64"])
def test_ties_named_either_way_are_not_mismatches(check):
    got = results(TIED, check)
    assert [r.status for r in got] == ["ok"] * len(TIED), [(r.config, r.message) for r in got if r.status != "ok"]
    # the sorts' ties are settled and said (the contiguous kernel orders them otherwise)
    if check == "layout":
        assert all("compared by the values they index" in r.message for r in got[:5]), [r.message for r in got[:5]]


def test_an_index_naming_another_value_is_a_mismatch_and_reversed_ties_are_not():
    lines = [
        'torch.ops.defects.sort.default(Tensor([3, 16], "float32"), 1)',  # distinct values: every index wrong
        'torch.ops.defects.sort.default(Tensor([3, 16], "float32", stride=[1, 0]), 1)',  # all tied: no harm
        'torch.ops.ties.sort.default(Tensor([3, 16], "float32", stride=[1, 0]), 1)',
        'torch.ops.ties.sort.default(Tensor([3, 16], "float32"), 1)',
    ]
    got = results(lines, "float64", imports=("planted_defects",))
    assert [r.status for r in got] == ["mismatch", "ok", "ok", "ok"], [(r.status, r.message) for r in got]
    assert got[0].message.startswith("output[1]"), got[0].message


def test_complex_values_non_finite_on_both_sides_are_equal_whatever_the_formula():
    """(inf+infj, inf+nanj, nan+nanj: which one a product with an infinity
    gives depends on the formula; torch promises none)"""
    import math

    import torch

    from api_tracer.replay.judge.compare import measure

    inf, nan = math.inf, math.nan
    a = torch.tensor([complex(inf, inf), complex(nan, nan), complex(-inf, nan), 1 + 2j], dtype=torch.complex64)
    b = torch.tensor([complex(nan, nan), complex(inf, -inf), complex(inf, 0), 1 + 2j], dtype=torch.complex64)
    assert measure(a, b, 1e-5, 1e-8, "output").beyond == 0
    for finite_against_not in (complex(inf, 0), complex(nan, nan)):  # (still a difference past any bound)
        c = b.clone()
        c[3] = finite_against_not
        e = measure(a, c, 1e-5, 1e-8, "output")
        assert e.beyond == 1 and e.excess == math.inf
