"""api-tracer replay --check: configs judged against float64, another
device or torch.compile, by outputs and (--backward) gradients."""
import pytest
import torch

from api_tracer.replay.compare import Comparison, Mismatch


def test_nan_where_the_other_side_has_nan_is_equal():
    compare = Comparison("other")
    compare(torch.tensor([float("nan"), float("inf"), 1.0]), torch.tensor([float("nan"), float("inf"), 1.0]), "out")
    assert (compare.errors[0].max_abs, compare.errors[0].beyond) == (0.0, 0)
    compare(torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]), "out")  # a NaN against a number
    assert (compare.errors[1].max_abs, compare.errors[1].beyond) == (float("inf"), 1)


def test_structures_none_scalars_and_complex_are_compared():
    compare = Comparison("float64")
    compare((torch.ones(2), None, 3, [True, "a"]), (torch.ones(2), None, 3, [True, "a"]), "output")
    differences = [
        ((torch.ones(2), None), (torch.ones(2), torch.ones(1)), "output[1]: None, a Tensor on the float64 side"),
        ((1, 2), (1, 2, 3), "output: 2 items, 3 on the float64 side"),
        (3, 4, "output: 3, 4 on the float64 side"),
        (True, 1, "output: a bool, a int on the float64 side"),
        (torch.ones(2, 3), torch.ones(3, 2), "output: shape [2, 3], [3, 2] on the float64 side"),
        (torch.ones(2), torch.ones(2, dtype=torch.int64), "output: torch.float32, torch.int64 on the float64 side"),
        ({"a": torch.ones(1)}, {"b": torch.ones(1)}, "output: the keys ['a'], ['b'] on the float64 side"),
    ]
    for a, b, said in differences:
        with pytest.raises(Mismatch) as e:
            compare(a, b, "output")
        assert str(e.value) == said
    exact = Comparison("float64")
    exact(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]), "output")
    assert (exact.errors[0].beyond, exact.errors[0].rtol, exact.errors[0].atol) == (1, 0.0, 0.0)
    close = Comparison("float64", dtype_of=lambda d: torch.complex128)  # complex64 may be complex128 there
    close(torch.tensor([1 + 1j]), torch.tensor([1 + 1.5j], dtype=torch.complex128), "output")
    assert close.errors[0].beyond == 1 and close.errors[0].max_abs == 0.5
