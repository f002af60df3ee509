"""The module paths of a model, and the global module hooks that follow a
thread through them; shared by Profile and APITracer(tag_modules=...).

Paths are named from the root, which is named after its class:
("Net", "features", "0"). They are numbered in tree order, a parent before
its children. A module instance reachable under several paths (shared) is,
for each call, given the path whose parent is the path the thread is in.
Hooks are PyTorch's global forward hooks: nothing is set on the model.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

PathLike = Union[str, Sequence[str]]


class ModuleTree:
    def __init__(self, model: Any, subtrees: Optional[Iterable[PathLike]] = None) -> None:
        self.root = type(model).__name__
        wanted = None if subtrees is None else [self.as_path(p) for p in subtrees]
        known = {
            self.as_path(name) if name else (self.root,): m for name, m in model.named_modules(remove_duplicate=False)
        }
        if wanted is not None:
            missing = [".".join(p) for p in wanted if p not in known]
            if missing:
                raise ValueError(f"paths: no module at {', '.join(missing)}")
        self.paths: List[Tuple[str, ...]] = []
        self.parents: List[int] = []
        self.scopes_of: Dict[int, List[int]] = {}
        index: Dict[Tuple[str, ...], int] = {}
        for path, module in known.items():
            if wanted is not None and not any(path[: len(p)] == p for p in wanted):
                continue
            index[path] = len(self.paths)
            self.parents.append(index.get(path[:-1], -1))
            self.paths.append(path)
            self.scopes_of.setdefault(id(module), []).append(index[path])
        # Holding the modules keeps their ids from being reused meanwhile.
        self.modules = {id(m): m for m in known.values()}

    def as_path(self, p: PathLike) -> Tuple[str, ...]:
        parts = tuple(p.split(".")) if isinstance(p, str) else tuple(p)
        if not parts:
            raise ValueError("paths: an empty path")
        return parts if parts[0] == self.root else (self.root,) + parts

    def names(self) -> List[str]:
        return [".".join(p) for p in self.paths]


class ModuleHooks:
    """Global forward hooks calling enter(scope) and exit(scope) for the
    modules of `tree`, on whatever thread runs them."""

    def __init__(self, tree: ModuleTree, enter: Callable[[int], None], exit: Callable[[int], None]) -> None:
        self.tree, self.enter, self.exit = tree, enter, exit
        self.local = threading.local()
        self.handles: List[Any] = []

    def install(self) -> None:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self.handles = [
            register_module_forward_pre_hook(self._pre),
            register_module_forward_hook(self._post, always_call=True),
        ]

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _pre(self, module: Any, args: Any) -> None:
        scopes = self.tree.scopes_of.get(id(module))
        if scopes is None:
            return
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        scope = scopes[0]
        if len(scopes) > 1:
            current = stack[-1] if stack else -1
            scope = next((s for s in scopes if self.tree.parents[s] == current), scopes[0])
        stack.append(scope)
        self.enter(scope)

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if id(module) not in self.tree.scopes_of:
            return
        stack = getattr(self.local, "stack", None)
        if stack:
            self.exit(stack.pop())
