"""torch's own objects as the constructor calls that rebuild them.

A `torch.nn` module or a `torch.optim` optimizer passed as an argument is
written as the call of its class that builds an equal object: the same
class and hyperparameters (`same_module`, `same_optimizer` say what is
compared). Its arguments are read back from the instance through the
signatures its class declares (`signatures`), and the call is kept only if
what it builds is equal to the instance; the caller (dialect.py) writes a
placeholder where no call is.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import types
import typing
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

# What `with torch.device("meta")` enters, which _module_call uses while
# tracing: imported with the package, so that tracing adds no module to
# torch's namespaces (tests/trace/test_compile.py).
import torch.utils._device  # noqa: F401 - the submodule loaded, read through torch.utils

from ...values import Call

# What a value is written as (a config line's text), to compare values as
# they would come back.
Written = Callable[[Any], str]
UNKNOWN = object()  # an argument that cannot be read back from the instance
_SCALARS = (bool, int, float, complex, str, type(None))


@functools.lru_cache(maxsize=None)
def signatures(cls: type) -> Tuple[Tuple[inspect.Parameter, ...], ...]:
    """The ways `cls(...)` may be called, as parameter lists (self, *args
    and **kwargs left out), in the order to try them: its __init__'s own
    signature, then the overloads it declares (typing.overload); where that
    __init__ takes *args, the same for the next __init__ up the MRO, which
    receives them, also without its leading required parameters, which the
    subclass may fill itself (LSTM passes RNNBase its mode); where none
    says, no arguments (Identity()). Worked out once per class."""
    return tuple(_signatures(cls))


def _signatures(cls: type) -> Iterator[Tuple[inspect.Parameter, ...]]:
    forwarded = False  # the __init__ below a *args one receives what it passes on
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        own_signature = False
        overloads = typing.get_overloads(init) if isinstance(init, types.FunctionType) else []
        for fn in [init, *overloads]:
            try:
                params = list(inspect.signature(fn).parameters.values())[1:]
            except (TypeError, ValueError):
                continue
            if any(p.kind is p.VAR_POSITIONAL for p in params):
                continue
            own_signature = own_signature or fn is init
            params = [p for p in params if p.kind is not p.VAR_KEYWORD]
            leading = len(
                list(itertools.takewhile(lambda p: p.default is p.empty and p.kind is not p.KEYWORD_ONLY, params))
            )
            for k in range(leading + 1 if forwarded else 1):
                yield tuple(params[k:])
        if own_signature:
            return
        forwarded = True
    yield ()  # no signature says how: perhaps with no arguments (Module.__init__ takes *args for mixins)


# -- modules -----------------------------------------------------------------


def same_module(built: Any, module: Any) -> bool:
    """Whether `built`, a module a constructor call built, is equal to
    `module`: the same class and repr (its hyperparameters as torch prints
    them, submodules included), the same parameters and buffers (name,
    class, shape, none while a lazy module's is uninitialized, and dtype),
    and in each submodule the plain attributes the call set (numbers,
    strings, dtypes and tuples of them) of the same value. Attributes set
    after construction by others (transformers' _is_hf_initialized) are not
    the constructor's; nor is `training`."""
    from torch.nn.parameter import is_lazy

    def tensors(m: Any) -> List[Tuple]:
        return [
            (name, type(t).__name__, None if is_lazy(t) else tuple(t.shape), t.dtype)
            for name, t in itertools.chain(m.named_parameters(), m.named_buffers())
        ]

    if (type(built), repr(built), tensors(built)) != (type(module), repr(module), tensors(module)):
        return False
    theirs = _attributes(module)
    mine = _attributes(built)
    return mine.keys() == theirs.keys() and all(mine[path].items() <= theirs[path].items() for path in mine)


def _attributes(module: Any) -> Dict[str, Dict[str, str]]:
    """Per submodule path, its plain attributes (`training` aside) as reprs."""
    import torch

    return {
        path: {k: repr(v) for k, v in vars(sub).items() if k != "training" and _plain(v, torch)}
        for path, sub in module.named_modules()
    }


def _plain(v: Any, torch: Any) -> bool:
    if isinstance(v, (tuple, list)):
        return all(_plain(x, torch) for x in v)
    return isinstance(v, (*_SCALARS, torch.dtype))


def module_call(module: Any, name: str, written: Written, describe: Callable[[Any], Any]) -> Optional[Call]:
    """`name(...)`, the call that builds a module equal to `module`, or
    None where its arguments cannot be known. `describe` writes a module
    that is itself an argument (None: it cannot be)."""
    cls = type(module)
    dtype = _dtype(module)
    if dtype is UNKNOWN:
        return None
    for params in signatures(cls):
        call = _module_call(module, cls, name, params, dtype, written, describe)
        if call is not None:
            return call
    return None


def _dtype(module: Any) -> Any:
    """The one floating dtype of the module's parameters and buffers (None:
    it has none; UNKNOWN: several, which no constructor makes)."""
    dtypes = {t.dtype for t in itertools.chain(module.parameters(), module.buffers()) if t.is_floating_point()}
    return dtypes.pop() if len(dtypes) == 1 else None if not dtypes else UNKNOWN


def _module_call(
    module: Any,
    cls: type,
    name: str,
    params: Tuple[inspect.Parameter, ...],
    dtype: Any,
    written: Written,
    describe: Callable[[Any], Any],
) -> Optional[Call]:
    """The call of one signature that builds a module equal to `module`, if
    any: its required parameters read back from the instance (positionally,
    keyword-only ones by keyword), its optional ones by keyword where the
    instance's value differs from what the required ones alone build (or,
    where they build nothing, from the default), the parameters' dtype where
    it is not the default. A flag the instance does not keep under its name
    (MultiheadAttention's bias) is either value: each is tried. Modules are
    built on the meta device: no memory is allocated."""
    import torch

    names = {p.name for p in params}
    extra: Dict[str, Any] = {}
    if dtype is not None and dtype != torch.get_default_dtype():
        if "dtype" not in names:
            return None
        extra["dtype"] = dtype
    args, required, optional = [], {}, []
    for p in params:
        if p.name in ("device", "dtype"):
            continue
        if p.default is not p.empty:
            optional.append(p)
            continue
        value = _argument(module, p, describe)
        if value is UNKNOWN:
            return None
        if p.kind is p.KEYWORD_ONLY:
            required[p.name] = value
        else:
            args.append(value)
    with torch.device("meta"), probing():
        base = _build(cls, args, dict(required, **extra))
        known, flags = {}, []
        for p in optional:
            mine = _argument(module, p, describe)
            if mine is UNKNOWN:
                if isinstance(p.default, bool):
                    flags.append(p)
                continue
            theirs = p.default if base is None else _argument(base, p, describe)
            if written(mine) != written(theirs):
                known[p.name] = mine
        for flipped in _subsets(flags, MAX_FLAGS_TRIED):
            kwargs = dict(required, **known, **{p.name: not p.default for p in flipped})
            kwargs = {p.name: kwargs[p.name] for p in params if p.name in kwargs}  # in the signature's order
            probe = base if kwargs == required and base is not None else _build(cls, args, dict(kwargs, **extra))
            if probe is not None and same_module(probe, module):
                return Call(name, *args, **kwargs, **extra)
    return None


MAX_FLAGS_TRIED = 3  # unread flags whose values are searched (2**3 builds at most)


_IGNORE_ALL = [("ignore", None, Warning, None, 0)]


@contextlib.contextmanager
def probing() -> Iterator[None]:
    """Around the objects describing builds to compare (the program does
    not make them): their warnings are not shown (the program's own were,
    when it built the object), and the generator's state is put back
    where they changed it (built on the meta device, they draw no numbers;
    a constructor that makes a tensor on a device of its own would). The
    warnings are ignored by handing the warnings machinery another
    filter list for the while, not with catch_warnings: that counts as a
    change of the filters, which empties every module's registry of the
    warnings it has shown, so that the program's "default" warnings would
    show again."""
    import torch

    filters, state = warnings.filters, torch.random.get_rng_state()
    warnings.filters = _IGNORE_ALL
    try:
        yield
    finally:
        warnings.filters = filters
        if not torch.equal(state, torch.random.get_rng_state()):
            torch.random.set_rng_state(state)


def _subsets(items: List[Any], limit: int) -> Iterator[Tuple[Any, ...]]:
    """The subsets of `items`, smallest first; only the empty one when
    there are more than `limit`."""
    sizes = range(len(items) + 1) if len(items) <= limit else range(1)
    return itertools.chain.from_iterable(itertools.combinations(items, r) for r in sizes)


def _build(cls: type, args: List[Any], kwargs: Dict[str, Any]) -> Any:
    """cls(*args, **kwargs), or None where that raises."""
    try:
        return cls(*args, **kwargs)
    except Exception:  # noqa: BLE001 - any failure means "not this call"
        return None


def _argument(module: Any, p: inspect.Parameter, describe: Callable[[Any], Any]) -> Any:
    """The value the instance holds for the parameter `p`, by its name, as
    it can be written (UNKNOWN: it holds none, or none that replay can
    rebuild). A flag whose attribute is a tensor or None (Linear's bias) is
    whether the tensor is there."""
    import torch

    try:
        value = getattr(module, p.name)
    except AttributeError:
        return UNKNOWN
    if isinstance(p.default, bool) and (value is None or isinstance(value, torch.Tensor)):
        return value is not None
    return value if _rebuildable(value, torch, describe) else UNKNOWN


def _rebuildable(v: Any, torch: Any, describe: Callable[[Any], Any]) -> bool:
    """Whether replay rebuilds `v` from what is written of it: plain values,
    torch's constants, tensors (of the same shape and dtype), modules
    written as their constructor calls, torch's functions."""
    if isinstance(v, (tuple, list)):
        return all(_rebuildable(x, torch, describe) for x in v)
    if isinstance(v, (*_SCALARS, torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Tensor)):
        return True
    if isinstance(v, torch.nn.Module):
        return describe(v) is not None
    return callable(v) and not isinstance(v, type) and (getattr(v, "__module__", "") or "").startswith("torch")


# -- optimizers ----------------------------------------------------------------


def same_optimizer(built: Any, optimizer: Any) -> bool:
    """Whether `built`, an optimizer a constructor call built, is equal to
    `optimizer`: the same class and defaults, and per parameter group the
    same options and parameters (tensors by shape and dtype, among the
    options too)."""

    def shapes(o: Any) -> List[List[Tuple]]:
        return [[(tuple(p.shape), p.dtype) for p in g["params"]] for g in o.param_groups]

    return _options(built) == _options(optimizer) and shapes(built) == shapes(optimizer)


def _options(optimizer: Any) -> Tuple:
    """The class, the defaults and per group the options and the number of
    parameters, hashable: what an optimizer's constructor call decides."""

    def options(d: Dict[str, Any]) -> Tuple:
        return tuple(sorted((k, _plain_option(v)) for k, v in d.items() if k != "params"))

    groups = tuple((options(g), len(g["params"])) for g in optimizer.param_groups)
    return type(optimizer), options(optimizer.defaults), groups


def _plain_option(v: Any) -> Any:
    """An optimizer's option as what its written form says of it, hashable:
    tensors by shape and dtype, the rest by repr (as numbers are written;
    nan equals nan)."""
    import torch

    if isinstance(v, (tuple, list)):
        return (type(v).__name__, *map(_plain_option, v))
    if isinstance(v, torch.Tensor):
        return ("Tensor", tuple(v.shape), v.dtype)
    return repr(v)


VERIFIED_KEPT = 64  # optimizers' options whose call was checked, kept (a scheduler makes new ones each step)


def optimizer_call(optimizer: Any, name: str, verified: Dict[Tuple, bool]) -> Optional[Call]:
    """`name(params, ...)`, the call that builds an optimizer equal to
    `optimizer` (over the same tensors), or None where there is none: the
    constructor's arguments that differ from its defaults, taken from the
    optimizer's defaults (only those the constructor accepts: AdamW's
    decoupled_weight_decay is not one); the parameters as a list of tensors,
    or where a group's options differ from the defaults (or hold more, as
    a scheduler's initial_lr), a list of group dicts holding what differs.
    Whether the call builds an equal optimizer (over the same tensors, so
    their shapes do not matter) is checked once per class and options
    (`verified` keeps the answers): the check builds one, which costs as
    much as describing it many times."""
    params = signatures(type(optimizer))[0]
    if not params:
        return None
    defaults = optimizer.defaults
    plain = {k: _plain_option(v) for k, v in defaults.items()}
    kwargs = {
        p.name: defaults[p.name]
        for p in params[1:]
        if p.name in defaults and (p.default is p.empty or plain[p.name] != _plain_option(p.default))
    }
    groups = [
        (
            list(g["params"]),
            {k: v for k, v in g.items() if k != "params" and (k not in plain or _plain_option(v) != plain[k])},
        )
        for g in optimizer.param_groups
    ]
    as_groups = len(groups) > 1 or bool(groups[0][1])
    first = [dict(params=tensors, **options) for tensors, options in groups] if as_groups else groups[0][0]
    key = _options(optimizer)
    if key not in verified:
        if len(verified) >= VERIFIED_KEPT:
            verified.clear()
        try:  # (given copies: it fills the group dicts it is given with the defaults)
            with probing():
                probe = type(optimizer)([dict(g) for g in first] if as_groups else first, **kwargs)
            verified[key] = same_optimizer(probe, optimizer)
        except Exception:  # noqa: BLE001 - any failure means "no such call"
            verified[key] = False
    return Call(name, first, **kwargs) if verified[key] else None


# -- generators of a module's members --------------------------------------------

# nn.Module's methods that yield its members (and those they call, on it
# and on its submodules): a generator one of them made, not started yet,
# yields what calling it again with the same arguments yields, while the
# module stays as it is.
MODULE_GENERATORS = (
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
)
_MEMBER_METHODS = (*MODULE_GENERATORS, "_named_members")


def generator_items(gen: Any) -> Optional[List[Any]]:
    """The items `gen` will yield, as a list, where it is a generator of
    torch.nn.Module's (``model.parameters()``) not started yet, of a module
    (and submodules) whose classes keep torch's own ways of listing their
    members: read by running the generator's code again, with the same
    arguments, into a generator of the tracer's own; `gen` itself is left as
    it is, for the program's callee to consume. None for any other (a
    generator of the program's own, one started, a ``named_modules`` given
    a memo set, which running it again would change)."""
    import inspect

    import torch

    code = gen.gi_code
    if (
        code.co_filename != torch.nn.modules.module.__file__
        or code.co_name not in MODULE_GENERATORS
        or code.co_qualname != f"Module.{code.co_name}"
        or code.co_freevars
        or inspect.getgeneratorstate(gen) != inspect.GEN_CREATED
    ):
        return None
    bound = inspect.getgeneratorlocals(gen)
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    if any(name not in bound for name in names) or bound.get("memo") is not None:
        return None
    if not _lists_members_as_torch_does(bound.get("self")):
        return None
    again = types.FunctionType(code, vars(torch.nn.modules.module))
    return list(again(**{name: bound[name] for name in names}))


def _lists_members_as_torch_does(module: Any) -> bool:
    """Whether `module` and every module under it (walked through their
    `_modules` dicts, no method called) list their members with
    torch.nn.Module's own methods, none overridden: listing them again then
    runs torch's code only, which changes nothing."""
    import torch

    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if not isinstance(m, torch.nn.Module) or id(m) in seen:
            if m is not None and not isinstance(m, torch.nn.Module):
                return False
            continue
        seen.add(id(m))
        for name in _MEMBER_METHODS:
            if next((k for k in type(m).__mro__ if name in vars(k)), None) is not torch.nn.Module:
                return False
        children = vars(m).get("_modules")
        if not isinstance(children, dict):
            return False
        todo.extend(children.values())
    return True
