"""The mapping between torch's and Paddle's APIs that `--check paddle` (a
torch config's call made in Paddle) and `--check torch` (a Paddle
config's made in torch) make a call by: PaConvert's, PaddlePaddle's
torch-to-Paddle converter (pinned in requirements.txt), read as data from
its api_mapping.json, never run. Chosen over PaddleAPITest's own
Paddle-to-torch mapping because it is maintained as a package (a pinned
version, on PyPI) and is pure data where it maps by data; theirs lives in
their repository and a third of its entries are code (rules) or Python
expressions to evaluate.

An entry maps one torch API (the entries of a module of the user's,
imported with --import, come first: its `API_MAPPING`, entries in
PaConvert's format, maps the user's own operators and functions). By
data, four ways (`BY_DATA`), and these
are the ones used; an entry of any other matcher converts by code
(`SizeAverageMatcher`'s legacy arguments aside) and its calls are
`unmapped`, saying so:

- ChangePrefixMatcher: `torch.X` is `paddle.X`, called the same (Paddle
  3.x takes torch's positions and names there);
- ChangeAPIMatcher: another Paddle API (`paddle_api`), called the same;
- GenericMatcher, SizeAverageMatcher: `paddle_api`, torch's parameters
  (`args_list`, in order) renamed (`kwargs_change`: "" drops one), some
  not supported (`unsupport_args`), Paddle's defaults added
  (`paddle_default_kwargs`, literals).

A torch call made in Paddle (`to_paddle`) follows the entry. A Paddle
call made in torch (`to_torch`) follows it back: the torch API whose entry
names it, its arguments bound by the Paddle function's own signature and
each renamed to one of the torch function's parameters: by the entry's
`kwargs_change` read backwards, else by the name itself, else by the
renames PaConvert's entries make most often (`renames`: x -> input, axis
-> dim, y -> other, epsilon -> eps, ...); a Paddle parameter with no
torch one is dropped where it holds Paddle's default, and makes the call
unmapped where it does not. A mapping read backwards may pair APIs that
do not compute the same (Paddle's gather takes rows, torch's elements):
the judge then finds their float64 results apart, and says so.

The counterpart keeps the line's arguments as they are laid out (the same
draws, value profiles and domains on both sides, the same paths): only
the built values are made the other call's (`Counterpart.adapt`), and a
dtype named in the line is named the other framework's way.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..replay.results import Unmapped
from ..values import Symbol

MAPPING_PACKAGE, MAPPING_FILE = "paconvert", "api_mapping.json"
SAME_CALL = ("ChangePrefixMatcher", "ChangeAPIMatcher")
RENAMED = ("GenericMatcher", "SizeAverageMatcher")
BY_DATA = SAME_CALL + RENAMED
DROPPED = ("name", "out")  # Paddle's op name, and an output tensor to write: no part of the computation
LEGACY = ("size_average", "reduce")  # (what SizeAverageMatcher converts by code)


USERS = "API_MAPPING"  # what a module of the user's (--import) may hold: entries of its own APIs


def mapping() -> Dict[str, Dict[str, Any]]:
    """torch API -> entry: the entries of the modules the user imported
    (--import; their API_MAPPING, in PaConvert's format: the user's own
    operators and functions mapped, over PaConvert's) first, then
    PaConvert's."""
    import sys

    from ..replay.user_code import modules

    found = (getattr(sys.modules[m], USERS, None) for m in modules())
    users = [u for u in found if isinstance(u, dict)]
    if not users:
        return paconvert()
    key = tuple(id(u) for u in users)
    if key not in _MERGED:
        merged: Dict[str, Dict[str, Any]] = {}
        for entries in [*users, paconvert()]:
            merged.update((k, v) for k, v in entries.items() if k not in merged)
        _MERGED[key] = merged
    return _MERGED[key]


_MERGED: Dict[Tuple[int, ...], Dict[str, Dict[str, Any]]] = {}


@functools.lru_cache(maxsize=None)
def paconvert() -> Dict[str, Dict[str, Any]]:
    """PaConvert's entries: torch API -> entry."""
    from importlib import resources

    try:
        text = resources.files(MAPPING_PACKAGE).joinpath(MAPPING_FILE).read_text()
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise Unmapped(f"no mapping between torch and Paddle: {MAPPING_PACKAGE} is not installed ({e})") from None
    return json.loads(text)


def paddle_api(torch_api: str, entry: Dict[str, Any]) -> str:
    if entry.get("Matcher") == "ChangePrefixMatcher":
        return "paddle." + torch_api[len("torch.") :]
    return entry.get("paddle_api", "")


def backwards() -> Dict[str, Tuple[str, ...]]:
    """Paddle API -> the torch APIs whose entries (by data) name it: the
    user's first, then those of the same name."""
    return _backwards(id(mapping()))


@functools.lru_cache(maxsize=8)
def _backwards(key: int) -> Dict[str, Tuple[str, ...]]:
    entries, theirs = mapping(), paconvert()
    found: Dict[str, List[str]] = collections.defaultdict(list)
    for torch_api, entry in entries.items():
        if entry.get("Matcher") in BY_DATA and torch_api.startswith("torch.") and paddle_api(torch_api, entry):
            found[paddle_api(torch_api, entry)].append(torch_api)

    def order(p: str, t: str) -> Tuple[bool, bool, str]:
        return entries[t] is theirs.get(t), t[len("torch.") :] != p[len("paddle.") :], t

    return {p: tuple(sorted(ts, key=lambda t: order(p, t))) for p, ts in found.items()}


@functools.lru_cache(maxsize=None)
def renames() -> Dict[str, Tuple[str, ...]]:
    """A Paddle parameter's name -> the torch names PaConvert's entries
    rename to it, the most frequent first (x: input, A, tensors)."""
    counts: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for entry in mapping().values():
        for torch_name, paddle_name in (entry.get("kwargs_change") or {}).items():
            if paddle_name and isinstance(paddle_name, str):
                counts[paddle_name][torch_name] += 1
    return {p: tuple(t for t, _ in c.most_common()) for p, c in counts.items()}


@dataclass
class Counterpart:
    """A call made in the other framework: its API, the line's arguments
    with their named dtypes that framework's, and how the built values
    become the call's arguments."""

    api: str
    args: list
    kwargs: dict
    adapt: Callable[[list, dict], Tuple[list, dict]]


def renamed_dtypes(args: list, kwargs: dict, prefix: str, to: str) -> Tuple[list, dict]:
    """The arguments with each named dtype (`paddle.float32`) named the
    other framework's way (`torch.float32`)."""
    import torch

    def swap(v: Any) -> Any:
        name = v.name[len(prefix) :] if isinstance(v, Symbol) and v.name.startswith(prefix) else ""
        return Symbol(to + name) if isinstance(getattr(torch, name, None), torch.dtype) else v

    def tree(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return type(v)(tree(x) for x in v)
        if isinstance(v, dict):
            return {k: tree(x) for k, x in v.items()}
        return swap(v)

    return tree(list(args)), {k: tree(v) for k, v in kwargs.items()}


# -- torch's call made in Paddle ---------------------------------------------------


def to_paddle(torch_api: str, args: list, kwargs: dict) -> Counterpart:
    """A torch call's counterpart in Paddle, by its entry; Unmapped where
    it has none by data, or it uses what the entry does not support."""
    entry = mapping().get(torch_api)
    if entry is None:
        raise Unmapped(f"PaConvert maps no {torch_api}")
    matcher, target = entry.get("Matcher"), paddle_api(torch_api, entry)
    if matcher not in BY_DATA or not target:
        raise Unmapped(f"PaConvert converts {torch_api} by code ({matcher}), not by data")
    args, kwargs = renamed_dtypes(args, kwargs, "torch.", "paddle.")
    if matcher in SAME_CALL:
        return Counterpart(target, args, kwargs, lambda a, k: (a, k))
    method = torch_api.startswith("torch.Tensor.")
    names = [n for n in entry.get("args_list", []) if n != "*"]
    changed, unsupported = entry.get("kwargs_change") or {}, set(entry.get("unsupport_args") or ()) | set(LEGACY)
    given = names[: len(args) - method] + list(kwargs)
    if len(args) - method > len(names):
        raise Unmapped(f"{torch_api} takes {len(names)} arguments in PaConvert's entry, the line {len(args)}")
    used = sorted(n for n in given if n in unsupported)
    if used:
        raise Unmapped(f"PaConvert's {torch_api} -> {target} does not support {', '.join(used)}")
    defaults = {}
    for name, text in (entry.get("paddle_default_kwargs") or {}).items():
        try:
            defaults[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise Unmapped(f"PaConvert's default {name}={text} for {target} is code, not a value") from None

    def adapt(a: list, k: dict) -> Tuple[list, dict]:
        named = dict(zip(names, a[method:]), **k)
        out = dict(defaults)
        out.update((changed.get(n, n), v) for n, v in named.items() if changed.get(n, n))
        return list(a[:method]), out

    return Counterpart(target, args, kwargs, adapt)


# -- Paddle's call made in torch ----------------------------------------------------


MISSING = inspect.Parameter.empty  # a parameter with no default (or one torch does not say)
SCHEMA_PREFIXES = {"torch.linalg.": "linalg_", "torch.special.": "special_", "torch.fft.": "fft_"}


def torch_parameters(func: Any, api: str) -> Optional[Dict[str, Any]]:
    """The parameters a torch callable takes by keyword, each with its
    default (MISSING: none): its signature's, or (a binding) its ATen
    schemas' ("self" as "input"); None where neither says."""
    schema = getattr(func, "_schema", None)  # (an operator: torch.ops.NAMESPACE.OP.OVERLOAD)
    schemas = [schema] if schema is not None else []
    if not schemas:
        try:
            return {n: p.default for n, p in inspect.signature(func).parameters.items()}
        except (TypeError, ValueError):
            pass
        import torch

        prefix = next((v for k, v in SCHEMA_PREFIXES.items() if api.startswith(k)), "")
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{prefix}{api.rpartition('.')[2]}")
    found: Dict[str, Any] = {}
    for s in schemas:
        for a in s.arguments:
            name = "input" if a.name == "self" else a.name
            found.setdefault(name, a.default_value if a.has_default_value() else MISSING)
    return found or None


def to_torch(
    paddle_api: str, paddle_func: Any, torch_resolve: Callable[[str], Any], args: list, kwargs: dict
) -> Counterpart:
    """A Paddle call's counterpart in torch: the first torch API whose entry
    names `paddle_api` and takes its arguments (see the module);
    Unmapped, with why, where none does."""
    method = paddle_api.startswith("paddle.Tensor.")
    candidates = [t for t in backwards().get(paddle_api, ()) if t.startswith("torch.Tensor.") == method]
    if not candidates:
        raise Unmapped(f"PaConvert maps no torch API to {paddle_api} by data")
    if "__" in paddle_api.rpartition(".")[2]:  # a Tensor operator: the same operands, in order
        if kwargs:
            raise Unmapped(f"{paddle_api} with keywords")
        return Counterpart(candidates[0], *renamed_dtypes(args, kwargs, "paddle.", "torch."), lambda a, k: (a, k))
    try:
        signature = inspect.signature(paddle_func)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise Unmapped(f"{paddle_api}'s arguments do not bind to its signature ({e})") from None
    bound.apply_defaults()
    why = ""
    for torch_api in candidates:
        plan, why = _plan(paddle_api, torch_api, signature, bound.arguments, torch_resolve)
        if plan is not None:
            break
    else:
        raise Unmapped(why)
    first = next(iter(signature.parameters)) if method else None
    args, kwargs = renamed_dtypes(list(args), dict(kwargs), "paddle.", "torch.")

    def adapt(a: list, k: dict) -> Tuple[list, dict]:
        import torch

        values = signature.bind(*a, **k)
        values.apply_defaults()
        out_args, out = [], {}
        for name, value in values.arguments.items():
            to = plan.get(name)
            if isinstance(value, str) and name == "dtype" and isinstance(getattr(torch, value, None), torch.dtype):
                value = getattr(torch, value)  # (Paddle takes a dtype by its name)
            if name == first:
                out_args.append(value)
            elif to:
                out[to] = value
        return out_args, out

    return Counterpart(torch_api, args, kwargs, adapt)


def _plan(
    paddle_api: str, torch_api: str, signature: inspect.Signature, bound: Dict[str, Any], resolve: Callable
) -> Tuple[Optional[Dict[str, str]], str]:
    """Each bound Paddle parameter's torch name ("" dropped), or None and why not."""
    try:
        torch_names = torch_parameters(resolve(torch_api), torch_api)
    except Exception as e:  # noqa: BLE001 - a torch API this torch lacks, or the policy's refusal
        return None, f"{paddle_api} -> {torch_api}: {e}"
    if torch_names is None:
        return None, f"{paddle_api} -> {torch_api}: torch says nothing of its parameters"
    back = {p: t for t, p in (mapping()[torch_api].get("kwargs_change") or {}).items() if p}
    plan: Dict[str, str] = {}
    for i, (name, value) in enumerate(bound.items()):
        if i == 0 and paddle_api.startswith("paddle.Tensor."):
            plan[name] = name  # (the tensor the method is called on: positional)
            continue
        if name in DROPPED:
            plan[name] = ""
            continue
        found = next((t for t in (back.get(name), name, *renames().get(name, ())) if t in torch_names), None)
        default = signature.parameters[name].default
        given = not (default is value or _equal(default, value))
        if found and not given and (value is None or _equal(torch_names[found], value)):
            plan[name] = ""  # (Paddle's default is torch's, or None: torch's own default holds)
        elif found and found in plan.values():
            return None, f"{paddle_api}: two of its parameters map to {torch_api}'s {found}"
        elif found:
            plan[name] = found
        elif not given:
            plan[name] = ""  # (Paddle's default, where torch has no such parameter)
        else:
            return None, f"{paddle_api}'s {name}={value!r} has no counterpart in {torch_api}"
    return plan, ""


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - values that do not compare
        return False
