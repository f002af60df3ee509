"""Paddle's own objects as the constructor calls that rebuild them.

A layer of `paddle.nn` or `paddle.vision`, an optimizer, a learning-rate scheduler, and what they
take (ParamAttr, initializers, regularizers, gradient clips) are written as the call of their class
that builds an equal object (a `Recipe`): its arguments read back from the instance through its
class's `__init__` signature (`raw`), kept only if what the call builds is equal (`same_layer`,
`same_optimizer`, `object_recipe` say what is compared); else the caller writes a placeholder.

What is built to compare is never the program's and draws nothing (probing.py).
"""

from __future__ import annotations

import functools
import inspect
import operator
import sys
import types
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...values import EVAL_MODE, Call
from ..dialect import public_name
from .probing import lazy_class, original, probing, unset

UNKNOWN = object()  # a value that cannot be read back, or not written so that replay rebuilds it
SKIP = object()  # what `key` does not compare (a helper of paddle's; a layer, compared as a sublayer)
_SCALARS = (bool, int, float, complex, str, type(None))
# Where the small objects paddle's constructors take live (read back as their calls too).
OBJECT_MODULES = ("paddle.base.param_attr", "paddle.nn.initializer.", "paddle.regularizer", "paddle.nn.clip")
LAYER_MODULES = ("paddle.nn.", "paddle.vision.")
CONTAINERS = ("paddle.nn.Sequential", "paddle.nn.LayerList", "paddle.nn.LayerDict")


class Recipe:
    """A call that builds an object equal to one of paddle's: its class and
    arguments; for a layer's, a weak reference to the layer (its modes)."""

    __slots__ = ("cls", "name", "args", "kwargs", "layer")

    def __init__(self, cls: type, args: Any, kwargs: Dict[str, Any], layer: Any = None) -> None:
        self.cls, self.name, self.args, self.kwargs = cls, public_name(cls), tuple(args), dict(kwargs)
        self.layer = weakref.ref(layer) if layer is not None else None


def build(value: Any, tensors: Optional[Callable[[Any], Any]] = None) -> Any:
    """`value` with its recipes built (each layer's class as `lazy_class` makes
    it), its tensors those `tensors` gives (kept where none)."""
    if isinstance(value, Recipe):  # (a verbose scheduler built quiet, its flag set after: it only prints)
        kwargs = build(value.kwargs, tensors)
        loud = kwargs.get("verbose") is True and issubclass(value.cls, sys.modules["paddle"].optimizer.lr.LRScheduler)
        made = lazy_class(value.cls)(*build(value.args, tensors), **dict(kwargs, verbose=False) if loud else kwargs)
        if loud:
            made.verbose = True
        return made
    if isinstance(value, (list, tuple)):
        return type(value)(build(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: build(v, tensors) for k, v in value.items()}
    return tensors(value) if tensors is not None and isinstance(value, sys.modules["paddle"].Tensor) else value


def written(value: Any, context: bool = True) -> Any:
    """`value` as the tracer writes it: recipes as calls, a layer whose mode is not `context` (its
    enclosing call's) as Eval(call); a layer whose modes no call says raises ValueError."""
    if isinstance(value, Recipe):
        layer = value.layer() if value.layer is not None else None
        own = context if layer is None else mode(layer)
        if own is None or (own and not context):
            raise ValueError(f"{value.name}: no call says its modes")
        call = Call(value.name, *written(value.args, own), **written(value.kwargs, own))
        return call if own == context else Call(EVAL_MODE, call)
    if isinstance(value, (list, tuple)):
        return type(value)(written(v, context) for v in value)
    return {k: written(v, context) for k, v in value.items()} if isinstance(value, dict) else value


def mode(layer: Any) -> Optional[bool]:
    """A layer's (and sublayers') training flag; a training container's own (its children say theirs)."""
    modes = {m.training for m in layer.sublayers(include_self=True)}
    if len(modes) == 1:
        return modes.pop()
    return True if layer.training and public_name(type(layer)) in CONTAINERS else None


# -- building to compare ---------------------------------------------------------
def _built(recipe: Recipe, tensors: Optional[Callable[[Any], Any]] = None) -> Any:
    """The recipe's object (in `probing`), None where building it raises."""
    try:
        return build(recipe, tensors)
    except Exception:  # noqa: BLE001 - any failure means "not this call"
        return None


# -- reading arguments back --------------------------------------------------------
@functools.lru_cache(maxsize=None)
def signature(cls: type) -> Optional[Tuple[inspect.Parameter, ...]]:
    """The parameters of `cls.__init__` (through a decorator's __wrapped__)
    less self, *args (Identity takes none) and **kwargs; None: none."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    return tuple(p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def _resnet_depth(m: Any) -> int:
    blocks = sum(len(getattr(m, f"layer{i}")) for i in (1, 2, 3, 4))
    return 2 + (2 if type(m.layer1[0]).expansion == 1 else 3) * blocks


def _after_conv(m: Any, norm: bool) -> Any:  # a ConvNormActivation's norm (or activation) layer's class
    rest = list(m)[1:]
    found = [type(s) for s in (rest[:1] if norm else rest[-1:]) if ("Norm" in type(s).__name__) == norm]
    return found[0] if found else None


def _weight_decay(o: Any) -> Any:  # an optimizer's (Momentum keeps a float's as its coefficient)
    return o._regularization_coeff if getattr(o, "_regularization_method", "") == "l2_decay" else o.regularization


_CONV = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "groups", "dilation")
# Other names paddle's layers keep an argument under (pooling's ksize).
ALIASES = {"kernel_size": "ksize", "divisor_override": "divisor", "weight_attr": "_param_attr", "width": "base_width"}
# Where paddle keeps a constructor's argument under no name of its own, by class (subclasses too): a
# function of the instance (verified, as every argument read back, by building the call).
DERIVED: Dict[str, Dict[str, Callable[[Any], Any]]] = {
    "paddle.nn.layer.layers.Layer": {"inplanes": lambda m: m.conv1._in_channels, "norm_layer": lambda m: type(m.bn1)},
    "paddle.nn.layer.common.Linear": {"in_features": lambda m: m.weight.shape[0]},
    "paddle.nn.layer.norm.BatchNorm": {"num_channels": lambda m: m.weight.shape[0]},
    "paddle.nn.layer.rnn.RNNBase": {"direction": lambda m: {1: "forward", 2: "bidirect"}[m.num_directions]},
    "paddle.nn.layer.transformer.TransformerEncoder": {"encoder_layer": lambda m: m.layers[0]},
    "paddle.nn.layer.transformer.TransformerDecoder": {"decoder_layer": lambda m: m.layers[0]},
    "paddle.vision.ops.ConvNormActivation": {
        **{p: functools.partial(lambda p, m: getattr(m[0], f"_{p}"), p) for p in _CONV},
        "bias": lambda m: m[0].bias is not None,
        "norm_layer": lambda m: _after_conv(m, True),
        "activation_layer": lambda m: _after_conv(m, False),
    },
    "paddle.nn.layer.transformer.Transformer": {
        "num_encoder_layers": lambda m: m.encoder.num_layers,
        "num_decoder_layers": lambda m: m.decoder.num_layers,
        **{  # (its layers' own arguments: the encoder's first keeps them)
            p: functools.partial(lambda p, m: m.encoder.layers[0]._config[p], p)
            for p in ("dim_feedforward", "dropout", "activation", "attn_dropout", "act_dropout", "normalize_before")
        },
    },
    "paddle.vision.models.resnet.ResNet": {"block": lambda m: type(m.layer1[0]), "depth": _resnet_depth},
    "paddle.vision.models.resnet.BasicBlock": {"planes": lambda m: m.conv1._out_channels},
    "paddle.vision.models.resnet.BottleneckBlock": {
        "planes": lambda m: m.conv3._out_channels // m.expansion,
        "groups": lambda m: m.conv2._groups,
        "dilation": lambda m: m.conv2._dilation[0],
        "base_width": lambda m: m.conv1._out_channels // m.conv2._groups * 64 * m.expansion // m.conv3._out_channels,
    },
    "paddle.optimizer.lr.LRScheduler": {"learning_rate": lambda s: s.base_lr},
    "paddle.optimizer.optimizer.Optimizer": {"weight_decay": _weight_decay},
}
DERIVED["paddle.nn.layer.common.Linear"]["out_features"] = lambda m: m.weight.shape[1]
# The same, read before the attribute of the argument's name, which holds something else: a scheduler
# is at the epoch after its last_epoch (its constructor steps once).
OVERRIDES: Dict[str, Dict[str, Callable[[Any], Any]]] = {
    "paddle.optimizer.lr.LRScheduler": {"last_epoch": lambda s: s.last_epoch - 1}
}


@functools.lru_cache(maxsize=None)
def _derived(cls: type, name: str, overrides: bool = False) -> Optional[Callable[[Any], Any]]:
    tables = [(OVERRIDES if overrides else DERIVED).get(f"{k.__module__}.{k.__qualname__}", {}) for k in cls.__mro__]
    return next((t[name] for t in tables if name in t), None)


def raw(obj: Any, p: inspect.Parameter) -> Any:
    """What `obj` holds for the parameter `p` (UNKNOWN: none): OVERRIDES', what
    a layer keeps of its arguments (`_config`), the attribute of its name,
    _name or alias (no method; no layer for a plain default), DERIVED's; a flag whose
    attribute is a tensor or None (Conv2D's bias): whether one is there."""
    paddle = sys.modules["paddle"]
    override, config = _derived(type(obj), p.name, True), getattr(obj, "__dict__", {}).get("_config")
    if override is not None or (isinstance(config, dict) and p.name in config):
        return _apply(override, obj) if override is not None else config[p.name]
    plain = isinstance(p.default, _SCALARS[:-1])
    for attr in (p.name, f"_{p.name}", ALIASES.get(p.name, p.name)):
        found = _apply(operator.attrgetter(attr), obj)
        if isinstance(found, types.MethodType) or (plain and isinstance(found, paddle.nn.Layer)):
            found = UNKNOWN
        if found is not UNKNOWN:
            break
    derived = _derived(type(obj), p.name)
    if found is UNKNOWN and derived is not None:
        found = _apply(derived, obj)
    if isinstance(p.default, bool) and (found is None or isinstance(found, paddle.Tensor)):
        return found is not None
    return found


def _apply(fn: Callable[[Any], Any], obj: Any) -> Any:
    try:
        return fn(obj)
    except Exception:  # noqa: BLE001 - not there, or a property or function that raises
        return UNKNOWN


def value(v: Any, tensors: bool = False) -> Any:
    """`v` as a recipe's argument: plain values, paddle's dtypes, places,
    classes, functions as they are; layers, schedulers, paddle's small
    objects as recipes; tensors where `tensors` (an optimizer's). UNKNOWN
    (UNKNOWN's too) where replay could not rebuild it (a program's function)."""
    paddle, cls = sys.modules["paddle"], type(v)
    if isinstance(v, _SCALARS):
        return v
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        items = [value(x, tensors) for x in v]
        return UNKNOWN if UNKNOWN in items else (list if isinstance(v, list) else tuple)(items)
    if cls is dict and all(isinstance(k, str) for k in v):
        items = {k: value(x, tensors) for k, x in v.items()}
        return UNKNOWN if UNKNOWN in items.values() else items
    if isinstance(v, paddle.Tensor):
        return v if tensors else UNKNOWN
    paddles = (getattr(v, "__module__", None) or "").startswith("paddle")
    if isinstance(v, paddle.dtype) or (
        paddles and isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType))
    ):
        return v
    if isinstance(v, functools.partial) and isinstance(v.func, type) and v.func.__module__.startswith("paddle"):
        return v if UNKNOWN not in (value(v.args), value(v.keywords)) else UNKNOWN
    if cls.__name__.endswith("Place") and cls.__module__.startswith("paddle"):
        return v
    if isinstance(v, paddle.nn.Layer):
        return layer_recipe(v) or UNKNOWN
    if isinstance(v, paddle.optimizer.lr.LRScheduler) or cls.__module__.startswith(OBJECT_MODULES):
        return object_recipe(v) or UNKNOWN
    return UNKNOWN


def _differs(mine: Any, theirs: Any) -> bool:
    """Whether two values (or one and a default) differ as `key` tells; numbers by value (0 is 0.0)."""
    if mine is theirs:
        return False
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (mine, theirs)):
        return not (mine == theirs or (mine != mine and theirs != theirs))
    a, b = key(mine), key(theirs)
    return a is SKIP or b is SKIP or a != b


# -- comparing ----------------------------------------------------------------------
def key(v: Any, depth: int = 0) -> Any:
    """`v` hashable, equal to another's where a constructor makes them
    alike: plain values by type and repr, tensors by shape and dtype,
    classes and functions by name, small objects by attributes; SKIP for
    what is not compared (paddle's helpers; layers: their sublayers are)."""
    paddle, module = sys.modules["paddle"], type(v).__module__ or ""
    if isinstance(v, _SCALARS):
        return (type(v).__name__, repr(v))
    if depth > 8 or isinstance(v, paddle.nn.Layer):
        return SKIP
    if isinstance(v, (list, tuple, dict)):
        entries = tuple((repr(k), key(x, depth + 1)) for k, x in (v.items() if isinstance(v, dict) else enumerate(v)))
        return SKIP if any(x is SKIP for _, x in entries) else ("dict" if isinstance(v, dict) else "list", entries)
    if isinstance(v, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, v))))
    if isinstance(v, paddle.Tensor):
        return ("Tensor", tuple(v.shape), str(v.dtype))
    if isinstance(v, paddle.dtype) or (module.startswith("paddle") and type(v).__name__.endswith("Place")):
        return ("str", str(v))
    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType)):
        return ("callable", getattr(v, "__module__", None), getattr(v, "__qualname__", repr(v)))
    if isinstance(v, types.MethodType):
        return ("method", key(v.__func__, depth + 1))
    if isinstance(v, functools.partial):
        return ("partial", key(v.func, depth + 1), key(v.args, depth + 1), key(v.keywords, depth + 1))
    if module.startswith("numpy") and hasattr(v, "tobytes"):
        return ("numpy", str(getattr(v, "dtype", "")), getattr(v, "shape", ()), v.tobytes())
    if type(v) is paddle.ParamAttr and key(_object_vars(v), depth + 1) == _default_attr():
        return key(None)  # (a ParamAttr of the defaults is what Paddle makes of None: Transformer passes one)
    if (module.startswith(OBJECT_MODULES) or isinstance(v, paddle.optimizer.lr.LRScheduler)) and hasattr(v, "__dict__"):
        return ("object", key(type(v)), key(_object_vars(v), depth + 1))
    return SKIP


@functools.lru_cache(maxsize=None)
def _default_attr() -> Any:  # (once paddle is imported)
    return key(_object_vars(sys.modules["paddle"].ParamAttr()), 1)


# A small object's attributes set by what uses it (a scheduler's variable).
OBJECT_SKIPPED = frozenset({"_var_name"})
# A layer's not its constructor's: mode, name, being called, loading; members (compared as such), helpers.
LAYER_SKIPPED = frozenset(
    "training _full_name _built _helper _op_recorder _parameters _sub_layers _buffers _loaddict_holder".split()
)


def _object_vars(obj: Any) -> Dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if k not in OBJECT_SKIPPED}


def _within(built: Any, obj: Any, skipped: frozenset) -> bool:
    """Whether the attributes a built object has (as `key` makes them, less
    `skipped`) are the instance's too (which may hold more)."""
    theirs = {name: key(v) for name, v in vars(obj).items() if name not in skipped}
    mine = ((name, key(v)) for name, v in vars(built).items() if name not in skipped)
    return all(k is SKIP or (name in theirs and theirs[name] == k) for name, k in mine)


def same_layer(built: Any, layer: Any) -> bool:
    """Whether `built` equals `layer`: class, repr, sublayers, parameters and
    buffers (name, shape, dtype), each sublayer's attributes (`_within`);
    not the parameters' values, stop_gradient, training flags."""

    def members(m: Any) -> List[Tuple]:
        subs = list(m.named_sublayers(include_self=True))
        return [(path, original(type(s))) for path, s in subs] + [
            (path, kind, name, None if t is None else (tuple(t.shape), str(t.dtype)))
            for path, s in subs
            for kind in ("_parameters", "_buffers")
            for name, t in vars(s)[kind].items()
            if name not in unset(s)
        ]

    if original(type(built)) is not type(layer) or members(built) != members(layer):
        return False
    try:
        if repr(built) != repr(layer):
            return False
    except Exception:  # noqa: BLE001 - a repr that raises: not comparable
        return False
    pairs = zip(built.sublayers(include_self=True), layer.sublayers(include_self=True))
    return all(_within(a, b, LAYER_SKIPPED | unset(a)) for a, b in pairs)


# -- layers -----------------------------------------------------------------------
# Per layer (by id, while it lives): its members' identities when its recipe was worked out, and the recipe.
_recipes: Dict[int, Tuple[Any, Tuple, Optional[Recipe]]] = {}


def layer_recipe(layer: Any) -> Optional[Recipe]:
    """The recipe of a layer of paddle.nn or paddle.vision, or None (a
    class of the program's own, arguments not read back, a state no call
    makes); once per layer while its members stay the same ones."""
    ident, members = id(layer), vars(layer)
    fingerprint = tuple(tuple(map(id, members[kind].values())) for kind in ("_sub_layers", "_parameters", "_buffers"))
    entry = _recipes.get(ident)
    if entry is not None and entry[0]() is layer and entry[1] == fingerprint:
        return entry[2]
    recipe = _layer_recipe(layer) if type(layer).__module__.startswith(LAYER_MODULES) else None
    try:  # (gone with the layer: its entry, unless another layer's took its id)
        ref = weakref.ref(layer, lambda ref: _recipes.get(ident, (None,))[0] is ref and _recipes.pop(ident))
    except TypeError:
        return recipe
    _recipes[ident] = (ref, fingerprint, recipe)
    return recipe


def _layer_recipe(layer: Any) -> Optional[Recipe]:
    """Required arguments positionally (keyword-only by keyword), optional
    ones where they differ from what the required build alone; [3, 3] as 3
    where that builds the same; a flag read from a tensor's presence
    (bias) only where no other argument (bias_attr=False) says it."""
    cls, name = type(layer), public_name(type(layer))
    params = signature(cls)
    if name in CONTAINERS or params is None:
        return _container_recipe(layer, cls, name) if name in CONTAINERS else None
    args, required = [], {}
    for p in (p for p in params if p.default is p.empty):
        v = value(raw(layer, p))
        if v is UNKNOWN:
            return None
        if p.kind is p.KEYWORD_ONLY:
            required[p.name] = v
        else:
            args.append(v)
    with probing():
        base = _built(Recipe(cls, args, required))
        known, flags = {}, {}
        for p in (p for p in params if p.default is not p.empty):
            mine = raw(layer, p)
            converted = UNKNOWN if mine is UNKNOWN else value(mine)
            theirs = UNKNOWN if base is None else raw(base, p)
            if converted is UNKNOWN or not _differs(mine, p.default if theirs is UNKNOWN else theirs):
                continue
            attr = getattr(layer, p.name, getattr(layer, f"_{p.name}", UNKNOWN))
            presence = isinstance(p.default, bool) and (attr is None or isinstance(attr, sys.modules["paddle"].Tensor))
            (flags if presence else known)[p.name] = converted
        full = (tuple(args), known)
        compact = (tuple(map(_compact, args)), {k: _compact(v) for k, v in known.items()})
        for call_args, call_kwargs in [compact, full] if compact != full else [full]:
            for chosen in ({}, flags) if flags else ({},):
                kwargs = dict(required, **call_kwargs, **chosen)
                kwargs = {p.name: kwargs[p.name] for p in params if p.name in kwargs}  # in the signature's order
                recipe = Recipe(cls, call_args, kwargs, layer)
                same_as_base = base is not None and (call_args, kwargs) == (tuple(args), required)
                probe = base if same_as_base else _built(recipe)
                if probe is not None and same_layer(probe, layer):
                    return recipe
    return None


def _compact(v: Any) -> Any:  # [3, 3] (a kernel size) as programs write it, 3
    return v[0] if type(v) in (list, tuple) and v and all(type(x) is int and x == v[0] for x in v) else v


def _container_recipe(layer: Any, cls: type, name: str) -> Optional[Recipe]:
    """A container as the call of its children (named otherwise than 0, 1, ...: (name, child) pairs)."""
    children = list(vars(layer)["_sub_layers"].items())
    recipes = [layer_recipe(child) if child is not None else None for _, child in children]
    names = [n for n, _ in children]
    numbered = names == [str(i) for i in range(len(names))]
    if None in recipes or (name == "paddle.nn.LayerList" and not numbered):
        return None
    if name == "paddle.nn.LayerDict":
        recipe = Recipe(cls, (dict(zip(names, recipes)),), {}, layer)
    elif name == "paddle.nn.LayerList":
        recipe = Recipe(cls, (recipes,), {}, layer)
    else:
        recipe = Recipe(cls, recipes if numbered else list(zip(names, recipes)), {}, layer)
    with probing():
        probe = _built(recipe)
    return recipe if probe is not None and same_layer(probe, layer) else None


# -- optimizers, schedulers and paddle's small objects --------------------------------
# An optimizer's attributes not its constructor's: its steps', helpers', parameters (compared as such).
OPTIMIZER_SKIPPED = frozenset(
    "helper _opti_name_list _accumulators _accumulators_holder _master_weights _master_grads _params_name _param_dict"
    " _already_create_accumulator _learning_rate_map _param_device_map _auxiliary_vars clear_gradients fusion_storage"
    " merged_model_params _fuse_buffer_version _parameter_list _param_groups".split()
)
VERIFIED_KEPT = 64  # states whose call was checked, kept (a scheduler makes new ones each step)


def leaves(value: Any, depth: int = 0) -> List[Any]:
    """What an optimizer's recipe is worked out from, cheaply (per call: see
    `unchanged`): its attributes less OPTIMIZER_SKIPPED (but its tensors and
    groups), by name; lists, tuples and dicts opened; schedulers and paddle's
    small objects by their attributes; the rest as the objects themselves."""
    paddle = sys.modules["paddle"]
    if depth == 0:
        kept = OPTIMIZER_SKIPPED - {"_parameter_list", "_param_groups"}
        items = [(k, v) for k, v in vars(value).items() if k not in kept]
    elif depth > 3 or isinstance(value, _SCALARS):
        return [value]
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(value))
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, paddle.optimizer.lr.LRScheduler) or type(value).__module__.startswith(OBJECT_MODULES):
        items = list(vars(value).items())
    else:
        return [value]
    found: List[Any] = [type(value), len(items)]
    for k, v in items:
        found.append(k)
        found.extend(leaves(v, depth + 1))
    return found


def unchanged(before: List[Any], now: List[Any]) -> bool:
    """Whether two `leaves` are alike: the same objects, equal plain values."""
    return len(before) == len(now) and all(
        a is b or (type(a) is type(b) and isinstance(a, _SCALARS) and a == b) for a, b in zip(before, now)
    )


def _groups(optimizer: Any) -> Optional[List[Dict[str, Any]]]:
    groups = optimizer._param_groups
    return list(groups) if groups and isinstance(groups[0], dict) else None


def _optimizer_state(optimizer: Any) -> Tuple:
    """What a call must build alike, hashable: class, tensors or groups,
    attributes less OPTIMIZER_SKIPPED (with groups, less those a step sets
    from each in turn, Adam's _beta1: its defaults say them); the skipped."""
    groups, skipped = _groups(optimizer), OPTIMIZER_SKIPPED
    skipped |= {f"_{k}" for k in getattr(optimizer, "_default_dict", {})} if groups else set()
    members = key(list(optimizer._parameter_list or [])) if groups is None else key(groups)
    attributes = ((k, key(v)) for k, v in vars(optimizer).items() if k not in skipped)
    return type(optimizer), members, tuple(sorted((k, v) for k, v in attributes if v is not SKIP)), skipped


def same_optimizer(built: Any, optimizer: Any) -> bool:
    """Whether `built` (over stand-ins) has the class, tensors or groups and attributes of `optimizer`."""
    theirs = _optimizer_state(optimizer)
    return _optimizer_state(built)[:2] == theirs[:2] and _within(built, optimizer, theirs[3])


def optimizer_recipe(optimizer: Any, verified: Dict[Any, Any]) -> Optional[Recipe]:
    """An optimizer's recipe over the same tensors, or None: by keyword, the
    arguments that differ from what the class builds without them, its
    tensors (``model.parameters()``) or groups (with the options that
    differ from what it fills in); once per state (`verified`)."""
    cls = type(optimizer)
    params = signature(cls)
    if params is None or optimizer._parameter_list is None:
        return None
    groups = _groups(optimizer)
    tensors = value(list(optimizer._parameter_list) if groups is None else groups, tensors=True)
    values: Dict[str, Any] = {}
    for p in params:
        v = tensors if p.name == "parameters" else value(raw(optimizer, p))
        if v is UNKNOWN and (p.default is p.empty or p.name == "parameters"):
            return None
        if v is not UNKNOWN:
            values[p.name] = v
    state = _optimizer_state(optimizer)[:3]
    if state not in verified:
        if len(verified) >= VERIFIED_KEPT:
            verified.clear()
        verified[state] = _optimizer_arguments(optimizer, cls, params, values)
    if verified[state] is None:
        return None
    names, options = verified[state]
    if groups is not None:
        values["parameters"] = [{k: g[k] for k in ("params", *kept)} for g, kept in zip(tensors, options)]
    return Recipe(cls, (), {n: values[n] for n in names})


def _optimizer_arguments(optimizer: Any, cls: type, params: Tuple, values: Dict[str, Any]) -> Optional[Tuple]:
    """The names of the arguments (and groups' options) that build it, or None; over stand-ins."""
    import paddle

    required = {p.name for p in params if p.default is p.empty} | {"parameters"}
    groups, made = _groups(optimizer), {}

    def stand_in(tensor: Any) -> Any:
        if id(tensor) not in made:
            made[id(tensor)] = (tensor, paddle.create_parameter(list(tensor.shape), tensor.dtype))
        return made[id(tensor)][1]

    def differs(p: inspect.Parameter) -> bool:
        theirs = UNKNOWN if base is None else raw(base, p)
        return _differs(raw(optimizer, p), p.default if theirs is UNKNOWN else theirs)

    with probing():
        bare = dict(values, parameters=[{"params": g["params"]} for g in values["parameters"]]) if groups else values
        base = _built(Recipe(cls, (), {n: v for n, v in bare.items() if n in required}), stand_in)
        names = tuple(p.name for p in params if p.name in values and (p.name in required or differs(p)))
        options = None
        if groups is not None:
            filled = _groups(base) if base is not None else None
            filled = filled if filled is not None and len(filled) == len(groups) else [{}] * len(groups)
            options = [
                tuple(k for k, v in g.items() if k != "params" and (k not in f or _differs(v, f[k])))
                for g, f in zip(groups, filled)
            ]
            kept = [{k: g[k] for k in ("params", *o)} for g, o in zip(values["parameters"], options)]
            values = dict(values, parameters=kept)
        probe = _built(Recipe(cls, (), {n: values[n] for n in names}), stand_in)
        return (names, options) if probe is not None and same_optimizer(probe, optimizer) else None


_objects_verified: Dict[Any, bool] = {}


def object_recipe(obj: Any) -> Optional[Recipe]:
    """A small object's (ParamAttr, initializer, regularizer, gradient clip)
    or scheduler's recipe, its optional arguments where not the defaults;
    kept where it builds one of equal attributes, checked once per state
    (None: ReduceOnPlateau's state, a function of the program's own)."""
    cls = type(obj)
    params = signature(cls)
    if params is None or not hasattr(obj, "__dict__"):
        return None
    args: List[Any] = []
    kwargs: Dict[str, Any] = {}
    for p in params:
        v = value(raw(obj, p))
        if v is UNKNOWN and p.default is p.empty:
            return None
        if v is not UNKNOWN and p.default is p.empty and p.kind is not p.KEYWORD_ONLY:
            args.append(v)
        elif v is not UNKNOWN and (p.default is p.empty or _differs(raw(obj, p), p.default)):
            kwargs[p.name] = v
    state = (cls, key(_object_vars(obj)))
    if state not in _objects_verified:
        with probing():
            built = _built(Recipe(cls, args, kwargs))
            same = type(built) is cls and key(_object_vars(built)) == state[1] != SKIP
        if len(_objects_verified) >= VERIFIED_KEPT:
            _objects_verified.clear()
        _objects_verified[state] = same
    return Recipe(cls, args, kwargs) if _objects_verified[state] else None
