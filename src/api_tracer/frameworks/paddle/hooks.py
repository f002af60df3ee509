"""Paddle's levels: what each records, and the hooks that record it.

Paddle has no function modes, dispatcher modes or RecordFunction callbacks
a tracer could register from Python, so every Paddle level is made of
patches in place (trace/hooks.py's SetattrHook, csrc/python/inplace.h): the
APIs stay the very objects they were. Its levels mean what torch's do:

- level 0, ``SetattrHook``: the public APIs of Paddle's API list, the
  outermost call of a thread (a layer's ``forward``, not the functional
  calls inside it);
- level 1, ``NestedApiHook``: the same APIs, every call, also those made
  inside another public API (every ``paddle.nn.functional`` call inside a
  layer, every ``paddle.*`` call inside another): the level Paddle's own API
  tracer and the corpus collected with it are at. Levels 0 and 1 share one
  set of patches: each call is recorded at level 0 where it is outermost
  and at level 1 always (one record where the output is merged);
- level 2, ``OperatorHook``: Paddle's eager operators, every call,
  recorded in order inside the API call that made it, forward and
  backward. Forward: the builtins of ``paddle._C_ops`` every Python API
  calls (``paddle._C_ops.matmul``), patched in place. A builtin that is a
  public API too (``paddle.linalg.matmul`` is ``paddle._C_ops.matmul``;
  four in Paddle 3.3) is patched once: where level 0 or 1 is traced, its
  calls are theirs, under its API name. Backward: Paddle's autograd engine
  calls the backward API (``paddle::experimental::matmul_grad``) from C++,
  past any Python function; the extension ``api_tracer._paddle_backward``
  (csrc/paddle/backward.cc) points the engine's calls of it at typed
  wrappers that hand each call's inputs to the session, recorded as the
  ``paddle._C_ops`` builtin that replays it (``paddle._C_ops.matmul_grad``),
  inside the ``backward`` call that ran them. Where that extension is not
  built (no Paddle headers at build time), level 2 records forward
  operators only, and says so (``OperatorHook.skipped``). Operators the
  C-implemented Tensor methods (``__add__``) reach are not seen: level 1
  records those methods' calls.
"""

from __future__ import annotations

import types
from typing import Dict, List, Tuple

from ... import _C
from ...trace.hooks import SetattrHook

API_LEVEL = int(_C.Level.setattr)
NESTED_LEVEL = API_LEVEL + 1
OPERATOR_LEVEL = NESTED_LEVEL + 1
# Where Paddle's eager operators are, and the prefix of their recorded names.
OPERATOR_MODULE = "paddle._C_ops"
# How OperatorHook.skipped names the backward operators, when it cannot record them.
BACKWARD = "backward operators"


class ApiHook(SetattrHook):
    """Level 0: the API list's outermost calls; with level 1 traced too,
    every call at level 1 as well, from the same patches."""

    def arming(self) -> Tuple[int, int]:
        return API_LEVEL, NESTED_LEVEL if NESTED_LEVEL in self.traced_levels else -1


class NestedApiHook(SetattrHook):
    """Level 1: every call of the API list's APIs, nested ones too. Where
    level 0 is traced, its hook's patches record for both, and this one
    patches nothing."""

    level = NESTED_LEVEL

    def arming(self) -> Tuple[int, int]:
        return API_LEVEL, NESTED_LEVEL

    def install(self) -> None:
        if API_LEVEL not in self.traced_levels:
            super().install()

    def uninstall(self) -> None:
        if API_LEVEL not in self.traced_levels:
            super().uninstall()


class OperatorHook(SetattrHook):
    """Level 2: every call of every eager operator (``paddle._C_ops.NAME``),
    patched in place."""

    level = OPERATOR_LEVEL

    def arming(self) -> Tuple[int, int]:
        return OPERATOR_LEVEL, OPERATOR_LEVEL

    def install(self) -> None:
        self.skipped = {}
        apis = self._patched_by_api_levels()
        try:
            for name, fn in operators():
                api = f"{OPERATOR_MODULE}.{name}"
                if not _C.allows(api):
                    continue
                if id(fn) in apis:
                    self.skipped[api] = f"the very builtin {apis[id(fn)]} is, recorded as that at levels 0 and 1"
                    continue
                if not _C.patch_c_function(fn, api, OPERATOR_LEVEL, every=OPERATOR_LEVEL):
                    self.skipped[api] = "not a C function that can be patched in place"
                    continue
                self.undo_with(lambda fn=fn: _C.unpatch(fn))
            self._record_backward()
        except BaseException:
            self.restore()
            raise

    def _record_backward(self) -> None:
        """Records the backward API calls Paddle's autograd engine makes,
        through api_tracer._paddle_backward, where it is built."""
        try:
            from ... import _paddle_backward as backward
        except ImportError:
            self.skipped[BACKWARD] = "api_tracer._paddle_backward is not built (no Paddle headers at build time)"
            return
        names: Dict[str, str] = {}

        def record(name: str, args: tuple) -> None:
            api = names.get(name)
            if api is None:
                api = names[name] = f"{OPERATOR_MODULE}.{name}"
            _C.record(OPERATOR_LEVEL, api, args)

        backward.install(record)
        self.undo_with(backward.uninstall)
        backward.set_recording(True)
        self.undo_with(lambda: backward.set_recording(False))

    def uninstall(self) -> None:
        self.restore()

    def _patched_by_api_levels(self) -> Dict[int, str]:
        """The operators that are public APIs too, by id, with their API
        name, where level 0 or 1 is traced: one builtin is patched once, by
        the API levels (paddle.linalg.matmul is paddle._C_ops.matmul)."""
        if API_LEVEL not in self.traced_levels and NESTED_LEVEL not in self.traced_levels:
            return {}
        names = self.options.api_list
        if names is None:
            names = self.dialect.api_list(full=self.options.disable_torch_api_list)
        targets, _ = self.dialect.setattr_targets(names)
        return {id(t.raw): t.api for t in targets if isinstance(t.raw, types.BuiltinFunctionType)}


def operators() -> List[Tuple[str, types.BuiltinFunctionType]]:
    """Paddle's eager operators: the public builtins of paddle._C_ops, by name."""
    from paddle import _C_ops

    return [
        (name, fn)
        for name, fn in sorted(vars(_C_ops).items())
        if not name.startswith("_") and isinstance(fn, types.BuiltinFunctionType)
    ]
