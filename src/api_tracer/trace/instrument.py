"""Instrumented copies of Python functions' code, for level 0 in place.

Level 0 records a Python function's calls without putting another object
in its place (csrc/python/inplace.h says why): the function's ``__code__``
is set, while tracing, to a copy of its code that calls a ``_C.CodeHook``
with its parameters on entry, and the hook's exits on its way out:

- on entry (after ``RESUME``): ``hook(param, ...)``, whose answer (a token)
  stays at the bottom of the frame's value stack;
- before every ``RETURN_VALUE``: ``returned(token)``;
- on an exception: a handler for every instruction that no handler of the
  code's own covers calls ``unwound(token)`` and re-raises the exception as
  it was, with the frame's last instruction put back (``RERAISE 1``), so the
  traceback, ``sys.exc_info()`` and ``f_lineno`` are what they are untraced.

Everything else stays: the function object (its identity, defaults,
signature, ``__wrapped__``), the frames (one per call, so ``warnings``'
``stacklevel`` and tracebacks count as untraced), the source and the line
numbers (the added instructions carry the position of the return they
stand before, or none, so a tracing debugger sees the same line events).
The hooks are objects of the extension's own types, not builtin functions,
so a profiler sees no calls of them either.

The copy is made for CPython 3.11's bytecode; ``instrumented`` answers None
on another version, and for generators and coroutines (their frames are
suspended and resumed): level 0 then wraps the function by setattr as it
wraps what it cannot patch in place.
"""

from __future__ import annotations

import dis
import opcode
import sys
import types
from typing import Any, Dict, List, Optional, Tuple

from .. import _C

SUPPORTED = sys.version_info[:2] == (3, 11)

_OP = opcode.opmap
_CACHES = dis._inline_cache_entries  # per opcode, the CACHE units that follow it
_JUMPS = frozenset(dis.hasjrel)
_BACKWARD = frozenset(op for op in _JUMPS if "BACKWARD" in opcode.opname[op])
_SUSPENDING = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR
_NO_POSITION: Tuple = (None, None, None, None)

_RETURNED = _C.CodeExit(returned=True)
_UNWOUND = _C.CodeExit(returned=False)


class _Ins:
    """One instruction of the copy: its opcode and argument (a jump's
    argument is worked out from its target, another _Ins), the source
    position of its units, and its offset once laid out."""

    __slots__ = ("op", "arg", "target", "position", "offset", "size")

    def __init__(self, op: int, arg: int = 0, position: Tuple = _NO_POSITION, target: "Optional[_Ins]" = None):
        self.op = op
        self.arg = arg
        self.target = target
        self.position = position
        self.offset = 0
        self.size = 1 + _CACHES[op]


def _decode(code: types.CodeType) -> Tuple[List[_Ins], dict]:
    """code's instructions, and the first instruction at each offset that
    starts one (its EXTENDED_ARG prefixes folded into it), in code units."""
    raw = code.co_code
    positions = list(code.co_positions())
    instructions: List[_Ins] = []
    starts: dict = {}
    jumps: List[Tuple[_Ins, int]] = []
    unit, ext, start = 0, 0, 0
    n = len(raw) // 2
    while unit < n:
        op, arg = raw[2 * unit], raw[2 * unit + 1] | ext
        if op == _OP["EXTENDED_ARG"]:
            ext = arg << 8
            unit += 1
            continue
        ins = _Ins(op, arg, positions[unit])
        if op in _JUMPS:
            jumps.append((ins, unit + 1 - arg if op in _BACKWARD else unit + 1 + arg))
        starts[start] = ins
        instructions.append(ins)
        unit += 1 + _CACHES[op]
        ext, start = 0, unit
    for ins, target in jumps:
        ins.target = starts[target]
    return instructions, starts


def _exception_table(code: types.CodeType) -> List[Tuple[int, int, int, int, bool]]:
    """(start, end, target, depth, lasti) per entry, in code units."""
    table = code.co_exceptiontable
    entries, i = [], 0

    def varint() -> int:
        nonlocal i
        b = table[i]
        i += 1
        value = b & 63
        while b & 64:
            b = table[i]
            i += 1
            value = (value << 6) | (b & 63)
        return value

    while i < len(table):
        start = varint()
        end = start + varint()
        target = varint()
        dl = varint()
        entries.append((start, end, target, dl >> 1, bool(dl & 1)))
    return entries


def _encode_exception_table(entries: List[Tuple[int, int, int, int, bool]]) -> bytes:
    out = bytearray()

    def item(value: int, first: bool) -> None:
        chunks = [value & 63]
        value >>= 6
        while value:
            chunks.append(value & 63)
            value >>= 6
        chunks.reverse()
        for k, c in enumerate(chunks):
            out.append(c | (64 if k < len(chunks) - 1 else 0) | (128 if first and k == 0 else 0))

    for start, end, target, depth, lasti in entries:
        item(start, True)
        item(end - start, False)
        item(target, False)
        item(depth << 1 | lasti, False)
    return bytes(out)


def _encode_positions(positions: List[Tuple], first_line: int) -> bytes:
    """CPython 3.11's location table (Objects/locations.md) for one position
    per code unit: runs of equal positions, up to 8 units an entry, each in
    the long form or as "no location"."""
    out = bytearray()

    def varint(v: int) -> None:
        while v >= 64:
            out.append(64 | (v & 63))
            v >>= 6
        out.append(v)

    line = first_line
    i = 0
    while i < len(positions):
        pos = positions[i]
        run = 1
        while run < 8 and i + run < len(positions) and positions[i + run] == pos:
            run += 1
        start, end, col, end_col = pos
        if start is None:
            out.append(0x80 | (15 << 3) | (run - 1))
        else:
            out.append(0x80 | (14 << 3) | (run - 1))
            delta = start - line
            varint((-delta << 1) | 1 if delta < 0 else delta << 1)
            varint((end if end is not None else start) - start)
            varint(col + 1 if col is not None else 0)
            varint(end_col + 1 if end_col is not None else 0)
            line = start
        i += run
    return bytes(out)


def _arg_units(arg: int) -> int:
    return 1 if arg < 1 << 8 else 2 if arg < 1 << 16 else 3 if arg < 1 << 24 else 4


def _layout(items: List[_Ins]) -> None:
    """Offsets and jump arguments, growing EXTENDED_ARG prefixes until
    every jump reaches its target."""
    for ins in items:
        ins.size = 1 + _CACHES[ins.op]
    while True:
        offset = 0
        for ins in items:
            ins.offset = offset
            offset += ins.size
        changed = False
        for ins in items:
            if ins.target is None:
                continue
            after = ins.offset + ins.size - _CACHES[ins.op]  # the unit after the jump's own
            ins.arg = after - ins.target.offset if ins.op in _BACKWARD else ins.target.offset - after
            assert ins.arg >= 0, "a jump points the wrong way"
        for ins in items:
            size = _arg_units(ins.arg) + _CACHES[ins.op]
            if size > ins.size:
                ins.size, changed = size, True
        if not changed:
            return


def _assemble(items: List[_Ins]) -> Tuple[bytes, List[Tuple]]:
    code = bytearray()
    positions: List[Tuple] = []
    for ins in items:
        prefix = ins.size - 1 - _CACHES[ins.op]
        for k in range(prefix, 0, -1):
            code += bytes((_OP["EXTENDED_ARG"], (ins.arg >> (8 * k)) & 0xFF))
        code += bytes((ins.op, ins.arg & 0xFF))
        code += bytes(2 * _CACHES[ins.op])
        positions.extend([ins.position] * ins.size)
    return bytes(code), positions


def _call(nargs: int, position: Tuple) -> List[_Ins]:
    """The call of what is on the stack: NULL, the callee, `nargs` arguments."""
    return [_Ins(_OP["PRECALL"], nargs, position), _Ins(_OP["CALL"], nargs, position)]


def instrument(code: types.CodeType, hook: Any) -> Optional[types.CodeType]:
    """A copy of `code` that calls `hook` on entry and the exits on its way
    out (see the module's docstring); None where that cannot be made."""
    if not SUPPORTED or code.co_flags & _SUSPENDING:
        return None
    instructions, starts = _decode(code)
    resume = next((k for k, ins in enumerate(instructions) if ins.op == _OP["RESUME"]), None)
    if resume is None:
        return None
    consts = list(code.co_consts)
    k_hook, k_returned, k_unwound = len(consts), len(consts) + 1, len(consts) + 2
    consts += [hook, _RETURNED, _UNWOUND]
    nparams = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    cells = set(code.co_cellvars)

    at = _NO_POSITION  # (with a line, a tracer would see the def line run once more)
    prologue = [_Ins(_OP["PUSH_NULL"], 0, at), _Ins(_OP["LOAD_CONST"], k_hook, at)]
    for i, name in enumerate(code.co_varnames[:nparams]):
        prologue.append(_Ins(_OP["LOAD_DEREF"] if name in cells else _OP["LOAD_FAST"], i, at))
    prologue += _call(nparams, at)
    entered = prologue[-1]  # from the CALL on, the token is on the stack and the exits must run

    items: List[_Ins] = instructions[: resume + 1] + prologue
    first = {}  # per original instruction, the first item that stands for it (a jump's target)
    for ins in instructions[resume + 1 :]:
        if ins.op == _OP["RETURN_VALUE"]:
            p = ins.position
            # [token, value] -> returned(token) -> [value]
            epilogue = [
                _Ins(_OP["SWAP"], 2, p),
                _Ins(_OP["PUSH_NULL"], 0, p),
                _Ins(_OP["SWAP"], 2, p),
                _Ins(_OP["LOAD_CONST"], k_returned, p),
                _Ins(_OP["SWAP"], 2, p),
                *_call(1, p),
                _Ins(_OP["POP_TOP"], 0, p),
            ]
            first[id(ins)] = epilogue[0]
            items += epilogue
        items.append(ins)
    # [token, lasti, exc] -> unwound(token) -> RERAISE with the frame's lasti put back
    handler = [
        _Ins(_OP["PUSH_NULL"]),
        _Ins(_OP["LOAD_CONST"], k_unwound),
        _Ins(_OP["COPY"], 5),
        *_call(1, _NO_POSITION),
        _Ins(_OP["POP_TOP"]),
        _Ins(_OP["RERAISE"], 1),
    ]
    end_of_body = len(items)
    items += handler
    for ins in items:
        if ins.target is not None:
            ins.target = first.get(id(ins.target), ins.target)

    # The code's own handlers keep their ranges (one more value below their
    # stack); the rest of the body, from the entry's CALL on, is ours.
    own = []
    for start, end, target, depth, lasti in _exception_table(code):
        own.append((starts[start], starts.get(end), starts[target], depth + 1, lasti))
    _layout(items)
    offset_of = {id(ins): ins.offset for ins in items}
    body_end = items[end_of_body].offset

    def off(ins: Optional[_Ins]) -> int:
        if ins is None:
            return body_end
        return first[id(ins)].offset if id(ins) in first else offset_of[id(ins)]

    entries = sorted((off(s), off(e), off(t), d, lasti) for s, e, t, d, lasti in own)
    ours, cursor = [], entered.offset
    for start, end, _, _, _ in entries:
        if start > cursor:
            ours.append((cursor, start, handler[0].offset, 1, True))
        cursor = max(cursor, end)
    if cursor < body_end:
        ours.append((cursor, body_end, handler[0].offset, 1, True))
    table = sorted(entries + ours)

    raw, positions = _assemble(items)
    stack = max(code.co_stacksize + 1, nparams + 2, 6)
    return code.replace(
        co_code=raw,
        co_consts=tuple(consts),
        co_stacksize=stack,
        co_linetable=_encode_positions(positions, code.co_firstlineno),
        co_exceptiontable=_encode_exception_table(table),
    )


# Per function, the hook and instrumented code made for its code: made once
# per process and re-armed by each session (a function stays here as long as
# the process: torch's own do anyway).
_made: Dict[types.FunctionType, Tuple[types.CodeType, Any, Optional[types.CodeType]]] = {}


def instrumented(fn: types.FunctionType) -> Tuple[Any, Optional[types.CodeType]]:
    """(hook, instrumented code) for `fn` as its code is now; the code is
    None where it cannot be made."""
    made = _made.get(fn)
    if made is None or made[0] is not fn.__code__:
        hook = _C.CodeHook(fn)
        made = (fn.__code__, hook, instrument(fn.__code__, hook))
        _made[fn] = made
    return made[1], made[2]
