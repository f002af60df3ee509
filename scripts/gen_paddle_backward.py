#!/usr/bin/env python3
"""Generate csrc/paddle/backward_wrappers.inc: one typed C++ wrapper per
Paddle backward (``*_grad``) API function that the eager autograd engine calls.

Paddle's eager engine calls ``paddle::experimental::<op>_grad(inputs...,
Tensor* outputs...)`` from libpaddle.so through its PLT; the definitions live
in libphi_core.so (which also calls them through its own PLT). The extension
api_tracer._paddle_backward replaces those GOT slots with the wrappers
generated here (see csrc/paddle/backward.cc).

The list comes from the binaries, not from headers (the wheel ships no
backward API headers): every JUMP_SLOT relocation of libpaddle.so and
libphi_core.so naming ``paddle::experimental::[sparse::]*_grad`` (double and
triple grads included), demangled with c++filt. Only the overloads that take
output pointers are wrapped: they return void, and they are the ones the
autograd engine calls. (The overloads that return their outputs have a return
type the mangled name does not carry; Python's ``paddle._C_ops.*_grad``
reaches those.)

Usage:
    python scripts/gen_paddle_backward.py [--paddle-dir DIR] [--out FILE] [--stats]

Needs readelf and c++filt (binutils). Without --paddle-dir it finds the paddle
package that this Python imports (without importing it).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "csrc", "paddle", "backward_wrappers.inc")

_TENSOR_VEC = "std::vector<paddle::Tensor, std::allocator<paddle::Tensor> >"

# demangled parameter type -> (C++ parameter type, kind). kind "in": converted
# for the callback; "out": an output pointer (not recorded).
SUPPORTED = {
    "paddle::Tensor const&": ("const paddle::Tensor&", "in"),
    "paddle::optional<paddle::Tensor> const&": ("const paddle::optional<paddle::Tensor>&", "in"),
    _TENSOR_VEC + " const&": ("const std::vector<paddle::Tensor>&", "in"),
    "paddle::optional<" + _TENSOR_VEC + " > const&": ("const paddle::optional<std::vector<paddle::Tensor>>&", "in"),
    "bool": ("bool", "in"),
    "int": ("int", "in"),
    "long": ("int64_t", "in"),
    "float": ("float", "in"),
    "double": ("double", "in"),
    "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&": (
        "const std::string&",
        "in",
    ),
    "std::vector<int, std::allocator<int> > const&": ("const std::vector<int>&", "in"),
    "std::vector<long, std::allocator<long> > const&": ("const std::vector<int64_t>&", "in"),
    "std::vector<float, std::allocator<float> > const&": ("const std::vector<float>&", "in"),
    "std::vector<double, std::allocator<double> > const&": ("const std::vector<double>&", "in"),
    "std::vector<bool, std::allocator<bool> > const&": ("const std::vector<bool>&", "in"),
    "paddle::experimental::IntArrayBase<paddle::Tensor> const&": ("const paddle::experimental::IntArray&", "in"),
    "paddle::experimental::ScalarBase<paddle::Tensor> const&": ("const paddle::experimental::Scalar&", "in"),
    "phi::DataType": ("phi::DataType", "in"),
    "phi::Place const&": ("const phi::Place&", "in"),
    "paddle::Tensor*": ("paddle::Tensor*", "out"),
    "std::vector<paddle::Tensor*, std::allocator<paddle::Tensor*> >": ("std::vector<paddle::Tensor*>", "out_vec"),
}

_NAME = re.compile(r"^paddle::experimental::((?:sparse::)?)([A-Za-z0-9_]+_grad)\((.*)\)$")


def paddle_dir() -> str:
    spec = importlib.util.find_spec("paddle")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("paddle is not installed for " + sys.executable)
    return list(spec.submodule_search_locations)[0]


def paddle_version(pdir: str) -> str:
    path = os.path.join(pdir, "version", "__init__.py")
    try:
        text = open(path).read()
    except OSError:
        return "unknown"
    m = re.search(r"^full_version\s*=\s*'([^']+)'", text, re.M) or re.search(
        r"^full_version\s*=\s*\"([^\"]+)\"", text, re.M
    )
    return m.group(1) if m else "unknown"


def jump_slot_symbols(lib: str) -> set[str]:
    out = subprocess.run(["readelf", "-rW", lib], check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        if "JUMP_SLOT" not in line:
            continue
        parts = line.split()
        if len(parts) >= 5 and parts[4].startswith("_ZN6paddle12experimental"):
            syms.add(parts[4].split("@")[0])
    return syms


def demangle(names: list[str]) -> list[str]:
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", check=True, capture_output=True, text=True).stdout
    res = out.splitlines()
    assert len(res) == len(names)
    return res


def split_params(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def collect(pdir: str):
    libpaddle = os.path.join(pdir, "base", "libpaddle.so")
    libphi = os.path.join(pdir, "libs", "libphi_core.so")
    from_paddle = jump_slot_symbols(libpaddle)
    from_phi = jump_slot_symbols(libphi)
    mangled = sorted(from_paddle | from_phi)
    funcs, unsupported = [], collections.Counter()
    n_grad = n_grad_paddle = n_returning = 0
    for sym, dem in zip(mangled, demangle(mangled)):
        m = _NAME.match(dem)
        if not m:
            continue
        n_grad += 1
        n_grad_paddle += sym in from_paddle
        ns, op, params = m.group(1), m.group(2), split_params(m.group(3))
        kinds = [SUPPORTED.get(p, (None, None))[1] for p in params]
        if not any(k in ("out", "out_vec") for k in kinds) and not any(
            p.endswith("*") or "Tensor*" in p for p in params
        ):
            n_returning += 1
            continue
        bad = [p for p in params if p not in SUPPORTED]
        if bad:
            for p in set(bad):
                unsupported[p] += 1
            continue
        name = ("sparse_" if ns else "") + op
        funcs.append((sym, name, [SUPPORTED[p] for p in params]))
    stats = dict(
        grad_symbols=n_grad,
        grad_symbols_in_libpaddle=n_grad_paddle,
        returning_overloads=n_returning,
        output_pointer_overloads=n_grad - n_returning,
        wrapped=len(funcs),
        unsupported=dict(unsupported.most_common()),
    )
    return funcs, stats


def render(funcs, version: str) -> str:
    lines = [
        "// GENERATED by scripts/gen_paddle_backward.py -- do not edit.",
        f"// Paddle {version}: {len(funcs)} backward API functions (paddle::experimental::*_grad,",
        "// the output-pointer overloads the eager autograd engine calls).",
        "// Regenerate (after a Paddle upgrade) with:",
        "//   .venv/bin/python scripts/gen_paddle_backward.py",
        "// Included by csrc/paddle/backward.cc, which defines record_call(), Scope,",
        "// BackwardEntry and the cv() converters.",
        "",
    ]
    entries = []
    for i, (sym, name, params) in enumerate(funcs):
        ptypes = ", ".join(t for t, _ in params)
        decl = ", ".join(f"{t} a{j}" for j, (t, _) in enumerate(params))
        ins = ", ".join(f"a{j}" for j, (_, k) in enumerate(params) if k == "in")
        fwd = ", ".join(f"std::move(a{j})" if k == "out_vec" else f"a{j}" for j, (_, k) in enumerate(params))
        lines.append(f"// {name}")
        lines.append(f"static void (*o_{i})({ptypes});")
        lines.append(f"static void w_{i}({decl}) {{")
        lines.append("  Scope s;")
        lines.append(f"  if (s.record) record_call({i}{', ' if ins else ''}{ins});")
        lines.append(f"  o_{i}({fwd});")
        lines.append("}")
        entries.append(f'  {{"{sym}", "{name}", reinterpret_cast<void*>(&w_{i}), reinterpret_cast<void**>(&o_{i})}},')
    lines.append("")
    lines.append(f"static constexpr int kNumEntries = {len(funcs)};")
    lines.append("static const BackwardEntry kEntries[kNumEntries] = {")
    lines.extend(entries)
    lines.append("};")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paddle-dir", default=None)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--stats", action="store_true", help="print counts, write nothing")
    a = ap.parse_args()
    pdir = a.paddle_dir or paddle_dir()
    funcs, stats = collect(pdir)
    for k, v in stats.items():
        if k != "unsupported":
            print(f"{k}: {v}")
    for p, n in stats["unsupported"].items():
        print(f"  unsupported ({n} functions): {p}")
    if a.stats:
        return
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(render(funcs, paddle_version(pdir)))
    print("wrote", os.path.relpath(a.out, ROOT))


if __name__ == "__main__":
    main()
