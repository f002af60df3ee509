"""Level 3 agrees with torch.profiler.profile(record_shapes=True) on real
workloads (an MLP training step, a small CNN forward and backward, a BERT
layer from transformers): at each nesting choice, the same aten operators,
the same number of calls, the same input shapes and dtypes."""

from collections import Counter

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from api_tracer import APITracer, TensorSpec, parse_call
from support import trace_lines, yaml_records
from support.workloads import WORKLOADS

# The profiler names dtypes the C++ way.
PROFILER_DTYPES = {
    "float": "float32",
    "double": "float64",
    "long int": "int64",
    "int": "int32",
    "bool": "bool",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "unsigned char": "uint8",
    "signed char": "int8",
    "short int": "int16",
}


def is_op(e):
    return e.name.startswith("aten::")


def has_op_below(e):
    return any(is_op(c) or has_op_below(c) for c in e.cpu_children)


def has_op_above(e):
    parent = e.cpu_parent
    while parent is not None and not is_op(parent):
        parent = parent.cpu_parent
    return parent is not None


KEEP = {"outermost": lambda e: not has_op_above(e), "all": lambda e: True, "innermost": lambda e: not has_op_below(e)}


def profiler_calls(step, nesting):
    """(op, tensor inputs) of every aten call the profiler saw at `nesting`."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    calls = Counter()
    for e in prof.events():
        if not is_op(e) or not KEEP[nesting](e):
            continue
        calls[(e.name, profiler_tensors(e))] += 1
    return calls


def profiler_tensors(e):
    """The (shape, dtype) of each tensor input of a profiler event; None where
    the installed torch does not report dtypes (before 2.12): then only op
    names and counts are compared."""
    dtypes = getattr(e, "input_dtypes", None)
    if dtypes is None:
        return None
    return tuple(
        (tuple(shape), PROFILER_DTYPES[dtype])
        for shape, dtype in zip(e.input_shapes, dtypes)
        if dtype in PROFILER_DTYPES
    )


# A Python number where the schema takes a Tensor travels as a 0-dim
# "wrapped number" tensor: the profiler shows the tensor, a config line the
# number (as PyTorch hands it to Python dispatch modes).
WRAPPED = {bool: "bool", int: "int64", float: "float64"}


def dispatcher_view(api, args, kwargs):
    """The tensor inputs of a traced call, as the dispatcher saw them."""
    _, _, ns, name, overload = api.split(".")
    schema = getattr(getattr(getattr(torch.ops, ns), name), overload)._schema
    by_name = {a.name: a for a in schema.arguments}
    values = list(zip(schema.arguments, args)) + [(by_name[k], v) for k, v in kwargs.items()]
    tensors = []
    for arg, v in values:
        if isinstance(v, TensorSpec):
            tensors.append((tuple(v.shape), v.dtype))
        elif type(v) in WRAPPED and isinstance(arg.type, torch.TensorType):
            tensors.append(((), WRAPPED[type(v)]))
    return f"aten::{name}", tuple(tensors)


class Node:
    def __init__(self, call, parent):
        self.call, self.parent, self.children = call, parent, []


def traced_tree(step, out):
    """Every operator call, as a tree rebuilt from the depths of nesting="all"."""
    with APITracer(output_path=str(out), levels=3, merge_output=True, nesting="all"):
        step()
    root = Node(None, None)
    open_calls = [root]
    for record, line in zip(yaml_records(out), trace_lines(out), strict=True):
        del open_calls[record["depth"] + 1 :]
        node = Node(dispatcher_view(*parse_call(line)), open_calls[-1])
        open_calls[-1].children.append(node)
        open_calls.append(node)
    return root


def walk(node):
    for child in node.children:
        yield child
        yield from walk(child)


def drop_profiler_duplicates(root):
    """torch.profiler's EventList drops a call that is the only child of a
    call of the same name (div_.Tensor inside div_.Scalar), lifting its
    children: the same rule on our tree."""
    changed = True
    while changed:
        changed = False
        for node in walk(root):
            parent = node.parent
            if parent is not root and parent.call[0] == node.call[0] and len(parent.children) == 1:
                parent.children = node.children
                for child in node.children:
                    child.parent = parent
                changed = True
                break


def traced_calls(step, out, nesting):
    root = traced_tree(step, out)
    drop_profiler_duplicates(root)
    nodes = {
        "outermost": root.children,
        "all": list(walk(root)),
        "innermost": [n for n in walk(root) if not n.children],
    }[nesting]
    return Counter(n.call for n in nodes)


@pytest.mark.parametrize("nesting", sorted(KEEP))
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_agrees_with_the_profiler(out, name, nesting):
    step = WORKLOADS[name]()
    step()  # warm up: lazy initialization happens outside both runs
    expected = profiler_calls(step, nesting)
    got = traced_calls(step, out / "all", nesting)
    if any(tensors is None for _, tensors in expected):
        got = Counter({(op, None): n for (op, _), n in got.items()})
    assert sum(expected.values()) > 20
    assert got == expected, (sorted((got - expected).items())[:5], sorted((expected - got).items())[:5])
    if nesting == "outermost":  # traced at that depth directly
        with APITracer(output_path=str(out / nesting), levels=3, merge_output=True, nesting=nesting):
            step()
        direct = Counter(dispatcher_view(*parse_call(line)) for line in trace_lines(out / nesting))
        if any(tensors is None for _, tensors in expected):
            direct = Counter({(op, None): n for (op, _), n in direct.items()})
        assert direct == expected
