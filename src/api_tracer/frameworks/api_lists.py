"""Regenerates the API lists level 0 wraps from the installed framework:
``python -m api_tracer.api_list [--dialect torch|paddle] [--check]``.

Each framework scans itself in its own api_list.py (frameworks/NAME/:
which namespaces make the default list, which modules a full scan leaves
out), as a subclass of `ApiLists`; what they share is here: the scan of one
module, the walk over a package's modules, keeping what the dialect's level
0 can wrap (its skip_reason), writing the files beside the dialect
(FrameworkDialect.api_list_file) and checking them."""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from . import FRAMEWORKS, dialect_named, framework, load
from .dialect import read_api_list

FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)
COMMAND = "python -m api_tracer.api_list"


# -- shared --------------------------------------------------------------------


def public(name: str) -> bool:
    return not name.startswith("_")


def functions(ns: str, names: Optional[Iterable[str]] = None) -> Set[str]:
    """The public functions of namespace `ns` among `names` (default: its
    __all__, else everything it holds), as dotted names."""
    mod = importlib.import_module(ns)
    found = set()
    for name in names if names is not None else getattr(mod, "__all__", dir(mod)):
        if public(name) and isinstance(getattr(mod, name, None), FUNCTION_TYPES):
            found.add(f"{ns}.{name}")
    return found


def scan_module(mod: types.ModuleType, root: str) -> Iterable[str]:
    """What a full scan finds in one module: the functions it exports, and
    the classes of `root` (the framework's package) with their public
    methods."""
    exported = getattr(mod, "__all__", None)
    for name in exported if exported is not None else dir(mod):
        if not public(name):
            continue
        obj = getattr(mod, name, None)
        if obj is None:
            continue
        if exported is None and getattr(obj, "__module__", mod.__name__) != mod.__name__:
            continue  # imported from elsewhere: listed where it is defined
        if isinstance(obj, FUNCTION_TYPES):
            yield f"{mod.__name__}.{name}"
        elif isinstance(obj, type) and obj.__module__.startswith(root):
            yield f"{mod.__name__}.{name}"
            for attr, raw in vars(obj).items():
                if public(attr) and (inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod))):
                    yield f"{mod.__name__}.{name}.{attr}"


def scan_package(package: types.ModuleType, skip: Callable[[str], bool]) -> Set[str]:
    """A full scan: scan_module over the package and each public module of
    it that imports (pkgutil's walk), less those `skip` names."""
    modules = [package]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=lambda _: None):
            if any(part.startswith("_") for part in info.name.split(".")[1:]) or skip(info.name):
                continue
            try:
                modules.append(importlib.import_module(info.name))
            except Exception:  # noqa: BLE001 - a module that does not import is not scanned
                continue
    names: Set[str] = set()
    for mod in modules:
        names.update(scan_module(mod, package.__name__))
    return names


class ApiLists:
    """One framework's two lists: what a dialect scans to make them."""

    framework = ""  # the dialect's name: --dialect, the files' prefix
    default_what = ""  # each file's first line
    full_what = ""
    order_note = ""  # a line of the header on the names' order, if any

    def version(self) -> str:
        raise NotImplementedError

    def default(self) -> List[str]:
        raise NotImplementedError

    def full(self) -> List[str]:
        raise NotImplementedError

    def command(self) -> str:
        return COMMAND if self.framework == "torch" else f"{COMMAND} --dialect {self.framework}"

    def dialect(self) -> Any:
        return dialect_named(self.framework)

    def wrappable(self, names: Iterable[str]) -> List[str]:
        """The names the dialect resolves and level 0 may wrap, in the
        list's order (`order`)."""
        targets, _ = self.dialect().setattr_targets(sorted(set(names)))
        return self.order(targets)

    def order(self, targets: List[Any]) -> List[str]:
        """The names of `targets` (PatchTargets) in the order the list has
        them: sorted."""
        return sorted(t.api for t in targets)

    def files(self) -> Dict[Path, Tuple[List[str], str]]:
        """path -> (names, what the list is)."""
        dialect = self.dialect()
        return {
            dialect.api_list_file(full=False): (self.default(), self.default_what),
            dialect.api_list_file(full=True): (self.full(), self.full_what),
        }

    def header(self, names: List[str], what: str) -> str:
        return (
            f"# {what}\n# Generated for {self.framework} {self.version()} by: {self.command()}\n"
            f"# {len(names)} APIs, each a dotted name level 0 records.\n"
            + (f"# {self.order_note}\n" if self.order_note else "")
        )

    def write(self, path: Path, names: List[str], what: str) -> None:
        path.write_text(self.header(names, what) + "".join(f"- {n}\n" for n in names), encoding="utf-8")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument(
        "--dialect",
        choices=sorted(FRAMEWORKS),
        default="torch",
        help="the framework whose lists are made (default: torch)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are out of date")
    args = parser.parse_args(argv)
    lists = load(framework(args.dialect).api_lists)()
    stale = False
    for path, (names, what) in lists.files().items():
        if args.check:
            if not path.exists() or read_api_list(path) != names:
                print(f"{path.name} is out of date", file=sys.stderr)
                stale = True
        else:
            lists.write(path, names, what)
            print(f"{path}: {len(names)} APIs")
    return 1 if stale else 0
