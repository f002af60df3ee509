"""torch's reproducers (fuzz/repro.py): a call built as replay builds
it, written as a standalone Python script of plain torch (`script`). The
script imports torch (and the user's --import modules, whose operators the
line calls; a --load-library library by its absolute path), makes the very
inputs replay made (each tensor's shape, dtype, strides and storage
offset, and its whole storage's values: written out where they are few or
all one value, else as compressed bytes), seeds torch's generator as
replay does, and calls the API by its name:

- a plain call (a crash, a hang, an unclean error) shows the defect by
  itself: the process dies of the same signal, never returns, or raises
  the same exception;
- under a check the script makes the check's other side too (on float64
  copies, contiguous copies, again, compiled, or on another device) and
  compares the two: at the element the judge found furthest past its
  bound, the difference against the bound the judge's error model gave
  there (written out: the error model is the judge's, not the script's),
  else every element within the rtol and atol the judge held it to, or
  bitwise (repeat). It prints what it found and exits 1 where the result
  is past that, 0 where it is within, as a test does.

A value no script writes out (a module, a generator, a sparse or quantized
tensor, a storage past MAX_PACKED bytes compressed) is NotWritable, naming
the argument."""

from __future__ import annotations

import base64
import math
import os
import re
import zlib
from dataclasses import replace
from typing import Any, Callable, List, Optional

from ...replay.builder import build
from ...replay.options import Job, ReplayOptions
from ...replay.results import NotWritable
from ...values import argument_path, keyword_path
from .side import seeded

SEED_OF_CALL = "torch.manual_seed({seed})"  # as replay seeds torch's generator around each call
LISTED = 64  # a storage of at most this many elements is written out as a list
MAX_PACKED = 16 << 20  # the most bytes of one storage's compressed values a script holds
LINE_WIDTH = 100


def _version() -> str:
    """This package's version, as installed (pyproject.toml's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("api_tracer")
    except PackageNotFoundError:
        return "(not installed)"


# -- values as Python source -----------------------------------------------------------------------


def _float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _scalar(x: Any) -> str:
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return repr(x)
    if isinstance(x, float):
        return _float(x)
    if isinstance(x, complex):
        return f"complex({_float(x.real)}, {_float(x.imag)})"
    raise TypeError(type(x).__name__)


def _listed(items: List[str]) -> str:
    """A list literal, wrapped within LINE_WIDTH inside inputs()."""
    text = ", ".join(items)
    if len(text) < 40:
        return f"[{text}]"
    import textwrap

    lines = textwrap.wrap(text, LINE_WIDTH - 12, break_long_words=False, break_on_hyphens=False)
    return "[\n" + "".join(f"            {line}\n" for line in lines) + "        ]"


PACK_CHUNK = 1 << 20  # bytes of a storage compressed at a time


def _packed(data: Any, path: str) -> str:
    """The bytes of `data` (a buffer), compressed and written in base85 as
    the script's `packed` takes them; NotWritable as soon as what is
    written would pass MAX_PACKED, before more of a large storage is
    compressed (a 1 GB one, packed whole and then refused, took tens of GB
    on its way)."""
    view = memoryview(data).cast("B")
    compressor, parts, size = zlib.compressobj(9), [], 0
    for start in range(0, len(view), PACK_CHUNK):
        parts.append(compressor.compress(view[start : start + PACK_CHUNK]))
        size += len(parts[-1])
        if size * 5 // 4 > MAX_PACKED:  # (base85 writes 5 characters for 4 bytes)
            raise NotWritable(
                f"{path}: its storage's values ({len(view):,} bytes) are past what a script holds "
                f"({MAX_PACKED:,} bytes packed)"
            )
    parts.append(compressor.flush())
    text = base64.b85encode(b"".join(parts)).decode("ascii")
    if len(text) > MAX_PACKED:
        raise NotWritable(f"{path}: its storage's values are {len(text):,} bytes packed, past what a script holds")
    chunks = [text[i : i + LINE_WIDTH - 8] for i in range(0, len(text), LINE_WIDTH - 8)] or [""]
    return "(\n" + "".join(f'            "{c}"\n' for c in chunks) + "        )"


def storage_values(t: Any, path: str) -> str:
    """Source of the values of tensor t's whole storage, as the script's
    `tensor` takes them: a list, full(v, n) or packed(bytes, n)."""
    import torch

    flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage()).detach().cpu()
    n = flat.numel()
    if n == 0:
        return "[]"
    listable = t.dtype.itemsize > 1 or t.dtype in (torch.bool, torch.uint8, torch.int8)
    if listable and n > 1 and bool((flat == flat[0]).all() or (flat != flat).all()):
        return f"full({_scalar(flat[0].item())}, {n})"
    if listable and n <= LISTED:
        return _listed([_scalar(v) for v in flat.tolist()])
    return f"packed({_packed(flat.view(torch.uint8).numpy(), path)}, {n})"


def literal(a: Any, b: Any, path: str) -> str:
    """Source of a built argument, `a`; `b` is the same argument as the
    check's float64 side built it (or `a`): where they differ, the script
    makes `b` when `wide`."""
    import torch

    if isinstance(a, torch.Tensor):
        if a.layout != torch.strided or a.is_quantized or a.is_nested:
            raise NotWritable(f"{path}: a {a.layout} tensor{' (quantized)' if a.is_quantized else ''}")
        extra = ", wide=wide" if isinstance(b, torch.Tensor) and b.dtype != a.dtype else ""
        if a.requires_grad:
            extra += ", requires_grad=True"
        return (
            f"tensor({a.dtype}, {list(a.shape)}, {list(a.stride())}, {a.storage_offset()}, "
            f"{storage_values(a, path)}, device=device{extra})"
        )
    if type(a) is not type(b) or not _same(a, b):
        return f"({literal(b, b, path)} if wide else {literal(a, a, path)})"
    if isinstance(a, (list, tuple)):
        items = [literal(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b))]
        if isinstance(a, torch.Size):
            return f"torch.Size([{', '.join(items)}])"
        if type(a) not in (list, tuple):
            raise NotWritable(f"{path}: a {type(a).__name__}")
        return f"[{', '.join(items)}]" if isinstance(a, list) else f"({', '.join(items)}{',' * (len(items) == 1)})"
    if isinstance(a, dict):
        return (
            "{" + ", ".join(f"{literal(k, k, path)}: {literal(v, b[k], f'{path}[{k!r}]')}" for k, v in a.items()) + "}"
        )
    if isinstance(a, (torch.dtype, torch.layout, torch.memory_format)):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, slice):
        return "slice(" + ", ".join(literal(x, x, path) for x in (a.start, a.stop, a.step)) + ")"
    if a is Ellipsis:
        return "..."
    try:
        return _scalar(a)
    except TypeError:
        raise NotWritable(
            f"{path}: a {type(a).__module__}.{type(a).__qualname__}, which a script cannot write out"
        ) from None


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return True  # (compared by literal)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(type(x) is type(y) and _same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(type(a[k]) is type(b[k]) and _same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object with an odd __eq__: written as it is, once
        return True


# -- the script -------------------------------------------------------------------------------------

HELPERS = '''
nan, inf = float("nan"), float("inf")


def full(value, n):
    """A storage of n elements, each `value`."""
    return lambda dtype: torch.full((n,), value, dtype=dtype)


def packed(text, n):
    """A storage of n elements, their bytes as written (zlib, base85)."""
    return lambda dtype: torch.frombuffer(bytearray(zlib.decompress(base64.b85decode(text))), dtype=torch.uint8).view(
        dtype
    )


def widened(dtype):
    """The dtype a float64 check makes a value of `dtype` in."""
    if dtype.is_complex:
        return torch.complex128
    return torch.float64 if dtype.is_floating_point else dtype


def tensor(dtype, shape, stride, offset, values, device="cpu", wide=False, requires_grad=False):
    """A tensor of `shape` and `stride` at `offset` into a storage holding
    `values` in `dtype` (in float64 if `wide`), as api-tracer replay makes it."""
    flat = values(dtype) if callable(values) else torch.tensor(values, dtype=dtype).reshape(-1)
    flat = flat.to(device=device, dtype=widened(dtype) if wide else dtype)
    t = torch.empty(0, dtype=flat.dtype, device=device)
    t.set_(flat.untyped_storage(), offset, shape, stride)
    return t.requires_grad_() if requires_grad else t


def summary(value):
    """What a call returned, in a line."""
    if isinstance(value, torch.Tensor):
        return f"tensor {list(value.shape)} {value.dtype} on {value.device}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of " + ", ".join(summary(v) for v in value)
    return repr(value)[:200]
'''

COMPARE = '''

def leaves(value, where="output"):
    """Each part of a result, named as api-tracer's judge names it."""
    if isinstance(value, torch.Tensor):
        yield where, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from leaves(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{where}[{k!r}]")
    else:
        yield where, value


def differs_in_structure(mine, theirs):
    """Where the two results differ past any tolerance (parts, shapes,
    dtypes, values that are not floating), or ""."""
    a, b = dict(leaves(mine)), dict(leaves(theirs))
    if list(a) != list(b):
        return f"the result's parts: {list(a)}, and {list(b)} on the {OTHER} side"
    for where, x in a.items():
        y = b[where]
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape:
                return f"{where}: shape {list(x.shape)}, and {list(y.shape)} on the {OTHER} side"
            if y.dtype not in (x.dtype, widened(x.dtype)):
                return f"{where}: {x.dtype}, and {y.dtype} on the {OTHER} side"
        elif type(x) is not type(y) or (not isinstance(x, (float, complex)) and x != y):
            return f"{where}: {x!r}, and {y!r} on the {OTHER} side"
    return ""


def flat(x):
    x = torch.as_tensor(x).detach().cpu().reshape(-1)
    return x.to(torch.complex128 if x.is_complex() else torch.float64)


def difference(x, y):
    """|x - y| of each element: 0 where both are NaN or the same infinity
    (complex: where both have a non-finite part, which a formula may make
    either), infinite where one is NaN and the other is not."""
    same = (x == y) | (x.isnan() & y.isnan())
    if x.is_complex():
        same |= ~x.isfinite() & ~y.isfinite()
    d = torch.where(same, torch.zeros((), dtype=torch.float64), (x - y).abs())
    return torch.where(d.isnan(), torch.full((), inf, dtype=torch.float64), d)


def past_bound(mine, theirs):
    """The element the judge found furthest past (or nearest to) its bound."""
    x, y = flat(dict(leaves(mine))[LEAF]), flat(dict(leaves(theirs))[LEAF])
    d = difference(x, y)
    here = d[INDEX].item()
    nan_once = bool(x[INDEX].isnan() != y[INDEX].isnan()) and here > 0  # (a NaN lost or made: past any bound)
    print(f"{LEAF}, element {INDEX} (row-major): {x[INDEX].item()!r}, and {y[INDEX].item()!r} on the {OTHER} side")
    times = f": {here / BOUND:.3g}x" if 0 < BOUND < inf else ""
    print(f"    difference {here:.6g}; bound {BOUND:.6g} (api-tracer's error model there){times}")
    print(f"    the greatest difference in {LEAF}: {d.max().item():.6g}, at element {int(d.argmax())} of {d.numel()}")
    if nan_once:
        print("    a NaN on one side only")
    return here > BOUND or nan_once


def past_tolerance(mine, theirs):
    """Every floating element within atol + rtol * |the other side's|."""
    past = False
    b = dict(leaves(theirs))
    for where, x in leaves(mine):
        tensor = isinstance(x, torch.Tensor)
        if not (isinstance(x, (float, complex)) or tensor and (x.is_floating_point() or x.is_complex())):
            continue
        x, y = flat(x), flat(b[where])
        d = difference(x, y)
        beyond = int((d > ATOL + RTOL * y.abs()).sum())
        worst = d.max().item() if d.numel() else 0.0
        print(f"{where}: {beyond} of {d.numel()} elements past atol {ATOL:g} + rtol {RTOL:g}; the greatest "
              f"difference {worst:.6g}")
        past = past or beyond > 0
    return past


def past_bitwise(mine, theirs):
    """Any tensor whose bytes differ from the other run's."""
    past = False
    b = dict(leaves(theirs))
    for where, x in leaves(mine):
        if isinstance(x, torch.Tensor):
            y = b[where]
            same = x.dtype == y.dtype and torch.equal(
                x.detach().cpu().contiguous().reshape(-1).view(torch.uint8),
                y.detach().cpu().contiguous().reshape(-1).view(torch.uint8),
            )
            print(f"{where}: {'the same bytes' if same else 'other bytes'} on the {OTHER} side")
            past = past or not same
    return past

'''

# How each check's other side is made in the script, and its name there.
OTHER_SIDE = {
    "float64": ("call(*inputs(wide=True))", "float64"),
    "layout": ("call(*contiguous_copies(inputs()))", "contiguous"),  # (side.py's own function: _layout)
    "repeat": ("call(*inputs())", "repeated"),
    "compile": ("call(*inputs(), compiled=True)", "compiled"),
}
DETERMINISTIC = (
    "torch.use_deterministic_algorithms(True, warn_only=True)  # as api-tracer's checks run\n"
    "    torch.utils.deterministic.fill_uninitialized_memory = True\n"
)


def script(job: Job, verdict: Any, cast: Optional[Callable[[Any], Any]], about: Any) -> str:
    """The script of the job's call, showing what `about` says (its kind,
    oracle, message, and where it was found): with job.options.check, the
    check's other side made and judged as `verdict` (judge/check.py's
    Verdict, None where the call was not judged) says; `cast` is the
    float64 side's (the --check float64 reference's), None for others.
    Raises NotWritable, or what replay raises for a line it cannot build."""
    import torch

    options, api = job.options, job.api
    if verdict is not None:
        job = replace(job, region=verdict.region)
    with seeded(options.seed, options.device):
        _, built_args, built_kwargs = build(job)
    wide_args, wide_kwargs = built_args, built_kwargs
    if cast is not None:
        with seeded(options.seed, options.device):
            _, wide_args, wide_kwargs = build(job, cast)
    written_args = [literal(a, b, argument_path(i)) for i, (a, b) in enumerate(zip(built_args, wide_args))]
    written_kwargs = [f"{k!r}: {literal(v, wide_kwargs[k], keyword_path(k))}" for k, v in built_kwargs.items()]
    _callable(api)
    parts = [
        _docstring(job.config.text, api, options, about, verdict, torch.__version__),
        "import base64\nimport sys\nimport zlib\nfrom typing import Any  # (contiguous_copies' annotations)\n\n"
        "import torch\n",
        _user_code(options),
        HELPERS,
        _inputs(written_args, written_kwargs, options.device),
        _call(api, options.seed),
    ]
    if options.check:
        parts += [COMPARE, _layout() if options.check == "layout" else "", _judged(options, verdict)]
    else:
        parts.append(_plain())
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(p for p in parts if p))


def _callable(api: str) -> Any:
    """The object `api` names, walked from torch as the script walks it;
    NotWritable where the walk finds none."""
    import torch

    obj: Any = torch
    for part in api.split(".")[1:]:
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            raise NotWritable(f"{api}: torch has no {part!r} there, which a script could call") from None
    return obj


def _docstring(text: str, api: str, options: ReplayOptions, about: Any, verdict: Any, version: str) -> str:
    shows = {
        "crash": f"The process dies: {about.message}.",
        "hang": f"The call does not return ({about.message}).",
        "error": f"The call raises {about.message}",
        "mismatch": f"The result is wrong: {about.message}",
    }.get(about.kind, "")
    if options.check and verdict is not None and verdict.message != about.message:
        shows += f"\n\nJudged here (--check {options.check}): {verdict.status.value}. {verdict.message}"
    runs = (
        "It exits 1 where the result is past what the check allows, 0 where it is within."
        if options.check
        else "It prints what the call returned, where the call returns."
    )
    user = options.imports + options.libraries
    needs = f"torch and {', '.join(user)} (the operators it calls)" if user else "torch"
    body = [
        "The config line (api-tracer's):",
        "",
        *_wrapped(text, "    "),
        "",
        *(_wrapped(about.found, "") + [""] if about.found else []),
        *(_wrapped(shows, "") + [""] if shows else []),
        *_wrapped(runs, ""),
        "",
        *_wrapped(f"Written by api-tracer {_version()} with torch {version}, on {options.device}; needs {needs}.", ""),
    ]
    escaped = [line.replace("\\", "\\\\").replace('"""', '\\"""') for line in body]
    return "\n".join([f'"""{api}: {about.kind or "the call"}, as a script of plain torch.', "", *escaped, '"""']) + "\n"


def _wrapped(text: str, indent: str) -> List[str]:
    import textwrap

    out: List[str] = []
    for paragraph in text.split("\n"):
        out += textwrap.wrap(paragraph, LINE_WIDTH - len(indent), break_long_words=True, break_on_hyphens=False) or [""]
    return [indent + line if line else line for line in out]


def _user_code(options: ReplayOptions) -> str:
    lines = []
    for module in options.imports:
        lines.append(f"import {module}  # noqa: F401 - registers the operators the call names (api-tracer --import)")
    for library in options.libraries:
        lines.append(f"torch.ops.load_library({os.path.abspath(library)!r})  # the operators (--load-library)")
    return "\n".join(lines) + "\n" if lines else ""


def _inputs(args: List[str], kwargs: List[str], device: str) -> str:
    written_args = "[\n" + "".join(f"        {a},\n" for a in args) + "    ]" if args else "[]"
    written_kwargs = "{\n" + "".join(f"        {k},\n" for k in kwargs) + "    }" if kwargs else "{}"
    return (
        f"\n\ndef inputs(wide=False, device={device!r}):\n"
        f'    """The call\'s arguments, as api-tracer replay made them."""\n'
        f"    args = {written_args}\n    kwargs = {written_kwargs}\n    return args, kwargs\n"
    )


def _call(api: str, seed: int) -> str:
    return (
        f"\n\ndef call(args, kwargs, compiled=False):\n"
        f'    """The call, torch\'s generator seeded as api-tracer replay seeds it."""\n'
        f"    func = {api}\n"
        f"    if compiled:\n        torch.compiler.reset()\n"
        f"        func = torch.compile(lambda *a, **k: {api}(*a, **k), fullgraph=True)\n"
        f"    {SEED_OF_CALL.format(seed=seed)}\n"
        f"    return func(*args, **kwargs)\n"
    )


def _layout() -> str:
    """The source of side.py's contiguous_copies, which makes --check
    layout's other side: the script's makes it the very same way."""
    import inspect
    import textwrap

    from .side import contiguous_copies

    return "\n" + textwrap.dedent(inspect.getsource(contiguous_copies))


def _plain() -> str:
    return '\n\nif __name__ == "__main__":\n    print("returned", summary(call(*inputs())))\n'


def _judged(options: ReplayOptions, verdict: Any) -> str:
    check = options.check or ""
    if check.startswith("device:"):
        other = (f"call(*inputs(device={check[len('device:') :]!r}))", check[len("device:") :])
    else:
        other = OTHER_SIDE.get(check, ("", ""))
    if not other[0]:
        raise NotWritable(f"--check {check}: no reproducer makes that check's other side")
    worst = verdict.worst if verdict is not None else None
    if check == "repeat":
        judge, constants = "past_bitwise", ""
    elif worst is not None and worst.measure not in ("rtol/atol", "exact"):
        judge = "past_bound"
        constants = f"LEAF, INDEX, BOUND = {worst.where!r}, {worst.index}, {_float(worst.allowed)}\n"
    else:
        rtol = worst.rtol if worst is not None else (options.rtol if options.rtol is not None else 1.3e-6)
        atol = worst.atol if worst is not None else (options.atol if options.atol is not None else 1e-5)
        judge, constants = "past_tolerance", f"RTOL, ATOL = {_float(rtol)}, {_float(atol)}\n"
    return (
        f"\nOTHER = {other[1]!r}\n{constants}\n\n"
        f'if __name__ == "__main__":\n    {DETERMINISTIC}'
        f"    mine = call(*inputs())\n    theirs = {other[0]}\n"
        f"    why = differs_in_structure(mine, theirs)\n"
        f"    if why:\n        print(why)\n        sys.exit(1)\n"
        f"    sys.exit(1 if {judge}(mine, theirs) else 0)\n"
    )
