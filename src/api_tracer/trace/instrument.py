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


# -- the name a call site reached a callable under -------------------------
#
# One function may be listed under several names (torch.conv2d is
# torch.nn.functional.conv2d, one builtin): level 0 patches it once, and
# names each call by the listing the program reached it through, where the
# calling frame's code says so. For each call instruction of a code object,
# `call_sites` works out how the callable it calls was loaded, where that
# was a chain of attributes from a global name (``F.conv2d``,
# ``torch.nn.functional.conv2d``): a forward pass over the bytecode that
# tracks, per stack slot, the loads that made it (a merge of two paths that
# disagree forgets it). The extension evaluates the chain in the frame
# (through modules' and classes' dicts only, no code runs) and checks that
# it still reaches the function called (csrc/python/inplace.h).

_NULL = "NULL"  # a NULL pushed below a callable (PUSH_NULL, LOAD_GLOBAL's low bit)

# Per opcode, how many stack items it takes (it pushes that many plus its
# stack effect, all unknown); the opcodes not here and not handled below
# forget the whole stack (depth kept).
_POPS: Dict[int, Any] = {
    _OP[name]: pops
    for names, pops in (
        (
            (
                "NOP RESUME EXTENDED_ARG CACHE KW_NAMES JUMP_FORWARD JUMP_BACKWARD JUMP_BACKWARD_NO_INTERRUPT "
                "COPY_FREE_VARS MAKE_CELL LOAD_CONST LOAD_FAST LOAD_DEREF LOAD_CLOSURE LOAD_CLASSDEREF "
                "LOAD_ASSERTION_ERROR LOAD_BUILD_CLASS GET_LEN IMPORT_FROM DELETE_FAST DELETE_DEREF DELETE_NAME "
                "DELETE_GLOBAL"
            ),
            0,
        ),
        (
            (
                "POP_TOP UNARY_POSITIVE UNARY_NEGATIVE UNARY_NOT UNARY_INVERT GET_ITER GET_YIELD_FROM_ITER "
                "LIST_TO_TUPLE STORE_NAME STORE_GLOBAL STORE_FAST STORE_DEREF LIST_APPEND SET_ADD LIST_EXTEND "
                "SET_UPDATE DICT_MERGE DICT_UPDATE UNPACK_SEQUENCE UNPACK_EX DELETE_ATTR "
                "POP_JUMP_FORWARD_IF_FALSE POP_JUMP_FORWARD_IF_TRUE POP_JUMP_FORWARD_IF_NONE "
                "POP_JUMP_FORWARD_IF_NOT_NONE POP_JUMP_BACKWARD_IF_FALSE POP_JUMP_BACKWARD_IF_TRUE "
                "POP_JUMP_BACKWARD_IF_NONE POP_JUMP_BACKWARD_IF_NOT_NONE"
            ),
            1,
        ),
        (
            "BINARY_SUBSCR BINARY_OP COMPARE_OP IS_OP CONTAINS_OP STORE_ATTR DELETE_SUBSCR MAP_ADD IMPORT_NAME",
            2,
        ),
        ("STORE_SUBSCR", 3),
        ("BUILD_TUPLE BUILD_LIST BUILD_SET BUILD_STRING BUILD_SLICE", lambda arg: arg),
        ("BUILD_MAP", lambda arg: 2 * arg),
        ("BUILD_CONST_KEY_MAP", lambda arg: arg + 1),
        ("FORMAT_VALUE", lambda arg: 2 if arg & 4 else 1),
        ("MAKE_FUNCTION", lambda arg: 1 + bin(arg & 0x0F).count("1")),
    )
    for name in names.split()
    if name in _OP
}
_ENDS = frozenset(_OP[n] for n in ("RETURN_VALUE", "RAISE_VARARGS", "RERAISE"))
_ALWAYS_JUMPS = frozenset(_OP[n] for n in ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"))


def _callee(a: Any, b: Any) -> Optional[Tuple[str, ...]]:
    """The load chain of the callable a call takes from the stack slots
    [a, b] below its arguments: b where a is NULL, a where it is a method's
    load (LOAD_METHOD pushes the function and self, or NULL and the
    attribute: either way the attribute is what is called)."""
    if a is _NULL:
        return b if isinstance(b, tuple) else None
    if isinstance(a, list):  # [chain]: LOAD_METHOD's first slot
        return a[0]
    return None


def _note(sites: Dict[int, Tuple[str, ...]], offset: int, chain: Optional[Tuple[str, ...]]) -> None:
    """The call at `offset` calls what `chain` loads, where it is a chain of
    attributes (a state seen again with less known takes it back)."""
    if chain is not None and len(chain) > 2:
        sites[offset] = chain
    else:
        sites.pop(offset, None)


def call_sites(code: types.CodeType) -> Dict[int, Tuple[str, ...]]:
    """Per offset of a call instruction of `code` (PRECALL, CALL,
    CALL_FUNCTION_EX: the frame's f_lasti while the callee runs), the chain
    the callable was loaded by, where it is one of attributes from a name:
    ``("g", "F", "conv2d")`` (LOAD_GLOBAL F, then the attribute conv2d),
    ``("n", ...)`` for LOAD_NAME (module-level code); calls whose callable
    came otherwise (a local, a call's result) are not in it. CPython 3.11's
    bytecode; empty on another."""
    if not SUPPORTED:
        return {}
    instructions = list(dis.get_instructions(code))
    index = {ins.offset: i for i, ins in enumerate(instructions)}
    states: Dict[int, list] = {}  # per instruction, the stack before it (what made each slot, or None)
    sites: Dict[int, Tuple[str, ...]] = {}
    work: List[int] = []

    def reach(i: int, stack: list) -> None:
        old = states.get(i)
        if old is not None:  # paths that disagree: what differs is forgotten
            same = len(old) == len(stack)
            stack = [x if same and x == y else None for x, y in zip(old, old if not same else stack)]
            if stack == old:
                return
        states[i] = stack
        work.append(i)

    reach(0, [])
    for entry in dis._parse_exception_table(code):
        if entry.target in index:
            reach(index[entry.target], [None] * (entry.depth + int(entry.lasti) + 1))
    while work:
        i = work.pop()
        ins = instructions[i]
        if ins.opcode in _ENDS:
            continue
        following = instructions[i + 1].offset if i + 1 < len(instructions) else -1
        after, taken = _step(ins, following, list(states[i]), sites)
        if ins.opcode in _JUMPS and ins.argval in index:
            reach(index[ins.argval], taken)
        if ins.opcode not in _ALWAYS_JUMPS and i + 1 < len(instructions):
            reach(i + 1, after)
    return sites


def _step(ins: dis.Instruction, following: int, stack: list, sites: Dict[int, Tuple[str, ...]]) -> Tuple[list, list]:
    """The stacks after `ins` (falling through to the instruction at offset
    `following`, and jumping), from the stack before it; a call's chain
    noted in `sites`."""
    op, arg = ins.opcode, ins.arg or 0
    if op == _OP["LOAD_GLOBAL"]:
        after = stack + ([_NULL] if arg & 1 else []) + [("g", ins.argval)]
    elif op == _OP["LOAD_NAME"]:
        after = stack + [("n", ins.argval)]
    elif op in (_OP["LOAD_ATTR"], _OP["LOAD_METHOD"]) and stack:
        chain = stack[-1] + (ins.argval,) if isinstance(stack[-1], tuple) else None
        after = stack[:-1] + ([[chain], chain] if op == _OP["LOAD_METHOD"] else [chain])
    elif op == _OP["PUSH_NULL"]:
        after = stack + [_NULL]
    elif op == _OP["COPY"] and 0 < arg <= len(stack):
        after = stack + [stack[-arg]]
    elif op == _OP["SWAP"] and 0 < arg <= len(stack):
        after = list(stack)
        after[-1], after[-arg] = after[-arg], after[-1]
    elif op == _OP["PRECALL"] and arg + 2 <= len(stack):
        chain = _callee(stack[-arg - 2], stack[-arg - 1])
        _note(sites, ins.offset, chain)
        _note(sites, following, chain)  # the CALL it precedes
        after = stack[: -arg - 2] + [None, None]
    elif op == _OP["CALL"] and len(stack) >= 2:
        after = stack[:-2] + [None]
    elif op == _OP["CALL_FUNCTION_EX"] and len(stack) >= 3 + (arg & 1):
        k = arg & 1
        _note(sites, ins.offset, _callee(stack[-3 - k], stack[-2 - k]))
        after = stack[: -3 - k] + [None]
    elif op in (_OP["JUMP_IF_FALSE_OR_POP"], _OP["JUMP_IF_TRUE_OR_POP"]) and stack:
        return stack[:-1], stack
    elif op == _OP["FOR_ITER"] and stack:
        return stack + [None], stack[:-1]
    else:
        return _unknown(ins, stack, False), _unknown(ins, stack, True)
    return after, after


def _unknown(ins: dis.Instruction, stack: list, jump: bool) -> list:
    """The stack after an instruction whose results are not followed: the
    items it takes (_POPS; all, for an opcode not there) replaced by as many
    unknown ones as it leaves."""
    op = ins.opcode
    pops = _POPS.get(op)
    pops = pops(ins.arg or 0) if callable(pops) else pops
    effect = dis.stack_effect(op, ins.arg, jump=jump) if op >= opcode.HAVE_ARGUMENT else dis.stack_effect(op)
    taken = len(stack) if pops is None or pops > len(stack) else pops
    return stack[: len(stack) - taken] + [None] * max(taken + effect, 0)


_C.set_call_site_reader(call_sites)
