"""torch's side of a replayed call: built (replay/builder.py, by
TorchBuilder) and made with torch's global generator seeded and grad mode
kept; the random operators it ran, noted by a TorchDispatchMode
(`RandomOps`); with --backward the gradients of its floating inputs
(autograd.grad with fixed cotangents); for a --check reference, compiled
(torch.compile) or on contiguous copies of its inputs."""

from __future__ import annotations

import contextlib
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ... import _C
from ...replay.builder import build
from ...replay.memory import storage_numel
from ...replay.options import Job
from ...replay.results import Skip, first_line
from ...replay.side import NoGradient, Outcome, Side, TimedCall, cotangent, device_of, dict_item_path, tensor_leaves
from ...values import argument_path, arguments, call_keyword_path, item_path, keyword_path


@contextlib.contextmanager
def grad_mode_kept() -> Iterator[None]:
    """A call that sets grad mode (torch._C._set_grad_enabled) sets it for
    itself only: the mode before it comes back."""
    import torch

    enabled = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch._C._set_grad_enabled(enabled)


@contextlib.contextmanager
def seeded(seed: int, device: str) -> Iterator[None]:
    """torch's global generators seeded with `seed` (the CPU's, and
    `device`'s if it is a CUDA device), and their states back after."""
    import torch

    cuda = [device_of(device).index] if torch.device(device).type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed)
        yield


def run_side(job: Job, side: Side, watch: bool = False) -> Outcome:
    """torch's side of a call (replay/side.py's run_side makes it, bounded):
    built on side.device (cast as side.cast says) from the options' seed
    and made, with torch's global generator seeded too; with
    options.backward, the gradients of its floating inputs: an argument
    the call refuses to take requiring grad (batch_norm's running_mean)
    is made again as it was, and has no gradient; a call that raises with
    its inputs requiring grad (detach_ of a view) and runs without is made
    so, and none has a gradient. `watch` notes the random operators that
    run, seen in a call of their own made first under RandomOps' dispatch
    mode: the outcome is that of a call made without it, since under any
    dispatch mode ATen's composite kernels take their tensor-subclass
    branches (at::isTensorSubclassLike holds of every tensor), and compute
    what plain torch does not (linear's bias added by at::add, not add_:
    bfloat16 + float16 made float32). Where the watched call raises, the
    unwatched one decides, with no random operator noted."""
    if not watch:
        return _run_held(job, side, False)
    try:
        seen = _run_held(job, side, True)
        random, unrepeatable = seen.random, seen.unrepeatable
        del seen  # (its tensors freed before the call is made again)
    except Exception:  # noqa: BLE001 - the unwatched call's own outcome, or failure, is the side's
        random, unrepeatable = [], []
    outcome = _run_held(job, side, False)
    outcome.random, outcome.unrepeatable = random, unrepeatable
    return outcome


def _run_held(job: Job, side: Side, watch: bool) -> Outcome:
    held: Dict[str, Any] = {}  # the inputs made as they are, not requiring grad (ALL: every one)
    first: Optional[RuntimeError] = None
    while True:
        try:
            return _run_side(job, side, watch, held)
        except RuntimeError as e:
            if ALL in held:
                raise first from None  # it fails as it is too: the call's own failure
            func = job.framework.resolve(job.api, job.config.text)
            refused = job.options.backward and refused_argument(e, func, job.args, job.kwargs)
            if refused and refused not in held:
                held[refused] = NoGradient("not differentiable")
            elif job.options.backward:
                first = e
                held[ALL] = NoGradient(f"the call refuses inputs that require grad: {first_line(e)}")
            else:
                raise


ALL = "*"  # run_side's `held`: every input


def _run_side(job: Job, side: Side, watch: bool, held: Dict[str, Any]) -> Outcome:
    import torch

    options = job.options
    # (sparse tensors the call makes are checked: see preconditions.py)
    with seeded(options.seed, side.device), torch.sparse.check_sparse_tensor_invariants():
        func, args, kwargs = build(job, side.cast, side.perturb, side.device)
        if side.contiguous:
            args, kwargs = contiguous_copies(args), contiguous_copies(kwargs)
        precision = least_precise(args, kwargs)
        floating_inputs = any(t.is_floating_point() or t.is_complex() for _, t in tensor_leaves([args, kwargs], ""))
        inputs: List[Tuple[str, Any, Callable[[Any], Any]]] = []
        if options.backward:
            args, kwargs = grad_inputs(args, kwargs, inputs, held)
            if ALL in held:
                named = [tensor_leaves(v, path) for path, v in arguments(args, kwargs)]
                held = {
                    path: held[ALL] for leaves in named for path, t in leaves if t.is_floating_point() or t.is_complex()
                }
        operators: Optional[List[str]] = None
        call = side.substitute if side.substitute is not None else compiled(func) if side.compiled else func
        random = RandomOps(watch)
        with grad_mode_kept():
            saved = side.perturb.saved if side.perturb is not None and options.backward else None
            with (
                random,
                torch.autograd.graph.saved_tensors_hooks(saved, _as_saved) if saved else contextlib.nullcontext(),
            ):
                if options.watches_behaviour:
                    with _C.NestedOps() as inside:
                        output = call(*args, **kwargs)
                    operators = inside.names()
                else:
                    output = call(*args, **kwargs)
            grads = {**held, **backward(output, inputs, options.seed, random)} if options.backward else {}
    outcome = Outcome(output, grads, random.ops, random.unrepeatable, precision, floating_inputs, (args, kwargs))
    outcome.operators = operators
    return outcome


def timed_backward(job: Job) -> TimedCall:
    """The job's call built on options.device, its floating inputs made to
    require grad (grad_inputs: an argument the call refuses so made as it
    was), one call made, and the backward of its floating outputs that
    require grad ready to be timed, with fixed cotangents and the graph
    kept (retain_graph) for the next."""
    import torch

    func, args, kwargs = build(job)
    held: Dict[str, Any] = {}
    while True:
        inputs: List[Tuple[str, Any, Callable[[Any], Any]]] = []
        grad_args, grad_kwargs = grad_inputs(args, kwargs, inputs, held)
        try:
            with grad_mode_kept():
                output = func(*grad_args, **grad_kwargs)
            break
        except RuntimeError as e:
            refused = refused_argument(e, func, args, kwargs)
            if not refused:
                raise Skip(f"--backward: the call refuses inputs that require grad: {first_line(e)}") from None
            if refused in held:
                raise
            held[refused] = NoGradient("not differentiable")
    outs = [t for _, t in tensor_leaves(output, "") if t.requires_grad and (t.is_floating_point() or t.is_complex())]
    if not outs or not inputs:
        raise Skip("--backward: no floating output of the call requires grad: it has no backward to time")
    weights = [cotangent(t, job.options.seed + i) for i, t in enumerate(outs)]
    # The backward from the outputs to the arguments as the call took them: the call's own. A call that
    # wrote into an argument has left none as it took it, so its backward runs on to the leaf the argument
    # was made from (a copy's backward with it).
    argued = [t for _, t in tensor_leaves([grad_args, grad_kwargs], "") if t.requires_grad]
    argued += [p for _, p, _ in inputs if isinstance(p, torch.nn.Parameter)]  # (a module's, as they are)
    wrote = any(a._version > 0 for a in argued)
    leaves = [leaf for _, leaf, _ in inputs] if wrote else argued
    grad = (torch.autograd.grad, (outs, leaves, weights), {"retain_graph": True, "allow_unused": True})
    return TimedCall(func, grad_args, grad_kwargs, grad)


def _as_saved(t: Any) -> Any:
    return t


def contiguous_copies(value: Any) -> Any:
    """`value` with each strided tensor in it that is not contiguous, or
    is a window of a larger storage, replaced by a contiguous copy of its
    values (requiring grad as it did)."""
    import torch

    if isinstance(value, torch.Tensor):
        if (
            value.layout != torch.strided
            or value.is_quantized
            or (value.is_contiguous() and value.untyped_storage().nbytes() == value.numel() * value.itemsize)
        ):
            return value
        copy = torch.empty_like(value, memory_format=torch.contiguous_format)
        with torch.no_grad():
            copy.copy_(value)
        return copy.requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(contiguous_copies(v) for v in value)
    if isinstance(value, dict):
        return {k: contiguous_copies(v) for k, v in value.items()}
    return value


def refused_argument(error: RuntimeError, func: Any, args: list, kwargs: dict) -> Optional[str]:
    """The path of the argument autograd's check_no_requires_grad names in
    `error` ("... is not differentiable with respect to argument 'NAME'"),
    found by its name among the call's parameters: an operator's schema, a
    Python function's signature."""
    import inspect

    import torch

    named = re.search(r"is not differentiable with respect to argument '(\w+)'", str(error))
    if not named:
        return None
    name = named.group(1)
    if name in kwargs:
        return keyword_path(name)
    if isinstance(func, torch._ops.OpOverload):
        names = [a.name for a in func._schema.arguments]
    else:
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):  # a builtin without a signature
            return None
    return argument_path(names.index(name)) if name in names[: len(args)] else None


def least_precise(args: list, kwargs: dict) -> Any:
    """The floating (or complex) dtype of the tensor arguments with the
    greatest epsilon; torch.float64 if there are none."""
    import torch

    dtypes = {t.dtype for _, t in tensor_leaves([args, kwargs], "") if t.is_floating_point() or t.is_complex()}
    return max(dtypes, key=lambda d: torch.finfo(d).eps, default=torch.float64)


def compiled(func: Callable) -> Callable:
    """torch.compile of the call alone, as one graph (fullgraph: a call
    that cannot be captured raises instead of running eagerly), Dynamo's
    caches cleared first, so no earlier config's code is reused."""
    import torch

    torch.compiler.reset()
    return torch.compile(lambda *args, **kwargs: func(*args, **kwargs), fullgraph=True)


def grad_inputs(args: list, kwargs: dict, inputs: list, held: Dict[str, Any]) -> Tuple[list, dict]:
    """The arguments, each floating tensor (but those `held` names) replaced
    by a copy that is a view of a non-leaf (so that the call may write to
    it in place) over a leaf that requires grad; appends (path, leaf, view)
    to `inputs`, view giving a leaf's gradient the argument's shape and
    strides. The parameters of modules are inputs as they are."""
    import torch

    def swap(v: Any, path: str) -> Any:
        if path in held or ALL in held:
            return v
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()) and v.layout == torch.strided:
            shape, stride = v.shape, v.stride()
            span = v.detach().as_strided((storage_numel(shape, stride),), (1,), v.storage_offset())
            leaf = span.clone().requires_grad_(True)
            inputs.append((path, leaf, lambda g: g.as_strided(shape, stride)))
            return leaf.clone().as_strided(shape, stride)
        if isinstance(v, (list, tuple)):
            return type(v)(swap(x, item_path(path, i)) for i, x in enumerate(v))
        if isinstance(v, dict):
            return {k: swap(x, dict_item_path(path, k)) for k, x in v.items()}
        if isinstance(v, torch.nn.Module):
            inputs.extend(
                (call_keyword_path(path, name), p, lambda g: g) for name, p in v.named_parameters() if p.requires_grad
            )
        return v

    return (
        [swap(a, argument_path(i)) for i, a in enumerate(args)],
        {k: swap(v, keyword_path(k)) for k, v in kwargs.items()},
    )


def backward(output: Any, inputs: list, seed: int, random: "RandomOps") -> Dict[str, Any]:
    """The gradient, for each input, of the output's floating tensors that
    require grad, each weighted by `cotangent`; all at once, else (one
    raised) input by input, an input whose gradient raises having a
    NoGradient that says what it raised."""
    import torch

    outs = [t for _, t in tensor_leaves(output, "") if t.requires_grad and (t.is_floating_point() or t.is_complex())]
    if not outs or not inputs:
        return {path: None for path, _, _ in inputs}
    weights = [cotangent(t, seed + i) for i, t in enumerate(outs)]

    def grad(leaves: list) -> tuple:
        with random, torch.enable_grad():
            return torch.autograd.grad(outs, leaves, weights, allow_unused=True, retain_graph=True)

    try:
        grads = dict(zip([path for path, _, _ in inputs], grad([leaf for _, leaf, _ in inputs])))
    except (RuntimeError, NotImplementedError):
        grads = {}
        for path, leaf, _ in inputs:
            try:
                grads[path] = grad([leaf])[0]
            except (RuntimeError, NotImplementedError) as e:
                grads[path] = NoGradient(f"{type(e).__name__}: {first_line(e)}")
    views = {path: view for path, _, view in inputs}
    return {path: g if g is None or isinstance(g, NoGradient) else views[path](g) for path, g in grads.items()}


class RandomOps:
    """While on (and `watch`): the random operators that run, those
    carrying torch.Tag.nondeterministic_seeded (dropout, randn,
    bernoulli_, ...) that drew from a generator (attention with a dropout
    probability of 0 does not), and those torch marks
    nondeterministic_bitwise (`unrepeatable`: atomic adds, say), noted by a
    TorchDispatchMode."""

    def __init__(self, watch: bool) -> None:
        self.watch = watch
        self.ops: List[str] = []
        self.unrepeatable: List[str] = []
        self.mode: Any = None

    def __enter__(self) -> "RandomOps":
        if self.watch:
            self.mode = _random_mode(self.ops, self.unrepeatable)
            self.mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.mode is not None:
            self.mode.__exit__(*exc)


def _generator_states() -> List[Any]:
    """The default generators' states: the CPU's, and CUDA's where it is
    initialized."""
    import torch

    states = [torch.get_rng_state()]
    if torch.cuda.is_initialized():
        states += torch.cuda.get_rng_state_all()
    return states


def _random_mode(ops: List[str], unrepeatable: List[str]) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # (else torch wraps __torch_dispatch__ to keep Dynamo out of it, and
            # that wrapper imports torch._dynamo, which sets up Inductor's cache
            # directory, on its first call: replay compiles nothing unasked)
            return False

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if torch.Tag.nondeterministic_bitwise in func.tags and str(func) not in unrepeatable:
                unrepeatable.append(str(func))
            if torch.Tag.nondeterministic_seeded not in func.tags or str(func) in ops:
                return func(*args, **kwargs)
            before = _generator_states()
            out = func(*args, **kwargs)
            after = _generator_states()
            own = kwargs.get("generator") is not None
            if own or len(before) != len(after) or any(not torch.equal(a, b) for a, b in zip(before, after)):
                ops.append(str(func))
            return out

    return Mode()
