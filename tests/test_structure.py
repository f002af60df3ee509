"""The package's structure: no import cycles, imports that go down the
layers docs/design.md's map states and never into another framework's
folder, files of a size one can read, a _C.pyi that matches the extension,
a layout in docs/design.md that names every file. Each reads the sources,
so none of them can go stale unnoticed."""

from __future__ import annotations

import ast
import fnmatch
import inspect
import re
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "api_tracer"
PLUGIN = ROOT / "src" / "pytest_api_tracer"


# -- import cycles ---------------------------------------------------------------


def module_name(path: Path) -> str:
    """api_tracer.x.y for src/api_tracer/x/y.py (the package for __init__.py);
    likewise for the pytest plugin's package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that `path` imports anywhere: at the top, inside
    functions, under `if TYPE_CHECKING:` (a cycle through annotations is a
    cycle all the same)."""
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = ".".join(filter(None, [base if node.level else "", node.module or ""]))
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # `from . import _C` names modules only; `from .x import y`, x and maybe x.y
            names = submodules if node.module is None else [base] + submodules
        else:
            continue
        found.update(name for name in names if name in modules)
    return found - {this}


def import_graph() -> Dict[str, Set[str]]:
    paths = sorted(PACKAGE.rglob("*.py")) + sorted(PLUGIN.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle as [a, b, ..., a], or None (depth-first search)."""
    done: Set[str] = set()

    def visit(node: str, path: List[str]) -> Optional[List[str]]:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            cycle = visit(nxt, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_import_graph_sees_the_imports():
    graph = import_graph()
    assert "api_tracer.trace.tracer" in graph["api_tracer"]  # from .tracer import APITracer
    assert (
        "api_tracer.frameworks.dialect" in graph["api_tracer.frameworks.api_lists"]
    )  # from api_tracer.frameworks.dialect import ...
    assert "api_tracer.trace.follow" in graph["api_tracer.trace._child.sitecustomize"]  # inside an `if`
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


# -- the layers, and the frameworks' folders ------------------------------------

# docs/design.md's map: lowest first; a module imports from its own layer and
# the ones below, never above. Patterns of module names (fnmatch), the first
# that matches a module placing it; frameworks' modules by their role.
LAYERS: List[Tuple[str, ...]] = [
    (
        "api_tracer.errors",
        "api_tracer.flags",
        "api_tracer.values",
        "api_tracer.config",
        "api_tracer.extension",
        "api_tracer._build_info",
        "api_tracer.util",
        "api_tracer.util.*",
    ),
    (
        "api_tracer.trace",
        "api_tracer.trace.options",
        "api_tracer.trace.instrument",
        "api_tracer.trace.hooks",
        "api_tracer.trace.module_tree",
        "api_tracer.trace.eager",
        "api_tracer.trace.signals",
    ),
    (
        "api_tracer.frameworks",
        "api_tracer.frameworks.dialect",
        "api_tracer.frameworks.api_lists",
        "api_tracer.frameworks.*.dialect",
        "api_tracer.frameworks.*.hooks",
        "api_tracer.frameworks.*.names",
        "api_tracer.frameworks.*.objects",
        "api_tracer.frameworks.*.probing",
        "api_tracer.frameworks.*.api_list",
        "api_tracer.frameworks.torch",
        "api_tracer.frameworks.paddle",
    ),
    (
        "api_tracer.formats",
        "api_tracer.formats.*",
        "api_tracer.frameworks.*.operator_inputs*",
        "api_tracer.frameworks.*.paddleapitest",
    ),
    (
        "api_tracer.trace.tracer",
        "api_tracer.trace.follow",
        "api_tracer.trace._child.*",
        "api_tracer.corpus",
        "api_tracer.corpus.*",
    ),
    (
        "api_tracer.replay.results",
        "api_tracer.replay.options",
        "api_tracer.replay.framework",
        "api_tracer.replay.resolve",
        "api_tracer.replay.draw",
        "api_tracer.replay.memory",
        "api_tracer.replay.builder",
        "api_tracer.replay.side",
        "api_tracer.replay.behaviour",
        "api_tracer.replay.user_code",
        "api_tracer.replay.pool",
        "api_tracer.replay.output",
        "api_tracer.replay.outcomes",
        "api_tracer.replay.keyed",
        "api_tracer.frameworks.torch_paddle",
        "api_tracer.frameworks.*.replay",
        "api_tracer.frameworks.*.resolve",
        "api_tracer.frameworks.*.policy",
        "api_tracer.frameworks.*.preconditions",
        "api_tracer.frameworks.*.operator_families",
        "api_tracer.frameworks.*.private_operators",
        "api_tracer.frameworks.*.indexing_operators",
        "api_tracer.frameworks.*.operator_checks",
        "api_tracer.frameworks.*.index_checks",
        "api_tracer.frameworks.*.fused_checks",
        "api_tracer.frameworks.*.side",
        "api_tracer.frameworks.*.tensors",
        "api_tracer.frameworks.*.gradients",
        "api_tracer.frameworks.*.repro",
        "api_tracer.frameworks.*.ties",
        "api_tracer.frameworks.*.accumulations",
        "api_tracer.frameworks.*.phases",
    ),
    ("api_tracer.replay.judge", "api_tracer.replay.judge.*"),
    ("api_tracer.replay", "api_tracer.replay.run", "api_tracer.replay.retrace", "api_tracer.replay.on_ray"),
    ("api_tracer.fuzz", "api_tracer.fuzz.*", "api_tracer.timing", "api_tracer.timing.*"),
    ("api_tracer.report", "api_tracer.report.*"),
    (
        "api_tracer",
        "api_tracer.__main__",
        "api_tracer.api_list",
        "api_tracer.profile",
        "api_tracer.cli",
        "api_tracer.cli.*",
        "pytest_api_tracer",
        "pytest_api_tracer.*",
    ),
]


def layer_of(module: str) -> int:
    """The layer of a module: the first of LAYERS with a pattern it matches."""
    for i, patterns in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return i
    raise AssertionError(f"{module}: in no layer of LAYERS (docs/design.md's map): place it")


def test_every_module_is_in_a_layer():
    assert [m for m in import_graph() if not _placed(m)] == []
    assert layer_of("api_tracer.frameworks.torch.replay") > layer_of("api_tracer.frameworks.torch.dialect")
    assert (
        layer_of("api_tracer.replay.run")
        > layer_of("api_tracer.replay.judge.check")
        > layer_of("api_tracer.replay.builder")
    )


def _placed(module: str) -> bool:
    try:
        layer_of(module)
    except AssertionError:
        return False
    return True


def test_imports_go_down_the_layers():
    upward = [
        f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
        for m, imports in sorted(import_graph().items())
        for t in sorted(imports)
        if layer_of(t) > layer_of(m)
    ]
    assert not upward, "\n".join(upward)


def framework_of_module(module: str) -> Optional[str]:
    """The framework whose folder holds `module`, if one does."""
    parts = module.split(".")
    folder = parts[2] if len(parts) > 2 and parts[:2] == ["api_tracer", "frameworks"] else None
    return folder if folder and (PACKAGE / "frameworks" / folder).is_dir() else None


def test_a_frameworks_folder_is_imported_by_itself_alone():
    """Nothing outside a framework's folder imports from it (the generic
    stages ask the registry, frameworks/__init__.py, which names each part
    as a string); no framework imports another's."""
    leaks = []
    for m, imports in sorted(import_graph().items()):
        for t in sorted(imports):
            owner = framework_of_module(t)
            if owner and framework_of_module(m) != owner and m != "api_tracer":  # (the public names' facade)
                leaks.append(f"{m} imports {t}")
    assert not leaks, "\n".join(leaks)


def test_the_registry_names_every_frameworks_folder():
    from api_tracer.frameworks import FRAMEWORKS, framework

    folders = sorted(p.name for p in (PACKAGE / "frameworks").iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(FRAMEWORKS)
    for name in FRAMEWORKS:
        f = framework(name)
        for where in (f.dialect, f.api_lists, f.replay, *f.reads, *(e.write for e in f.exports.values())):
            assert where.startswith(f"api_tracer.frameworks.{name}."), where


# -- files of one concept ------------------------------------------------------

MAX_LINES = 600  # a file longer than this is several files (the issue of the tree as a map)


def test_no_file_is_longer_than_a_reader_holds():
    sources = [
        p
        for top in ("src", "csrc", "include")
        for p in sorted((ROOT / top).rglob("*"))
        if p.suffix in (".py", ".cc", ".h") and "__pycache__" not in p.parts
    ]
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sources
        for n in [p.read_text(encoding="utf-8").count("\n")]
        if n > MAX_LINES
    ]
    assert not long, "\n".join(long)


# -- _C.pyi ---------------------------------------------------------------------

STUB = PACKAGE / "_C.pyi"
# METH_FASTCALL functions: their docstrings carry no signature to compare with.
UNSIGNED = {"torch_function_handler", "torch_dispatch_handler"}
# What pybind11 adds to each class of its own.
PYBIND_INTERNAL = {"_pybind11_conduit_v1_"}


def stub_declarations() -> Dict[str, ast.stmt]:
    """_C.pyi's top-level functions, classes and constants, by name."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    declared: Dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            declared[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared[node.target.id] = node
    return declared


def stub_members(cls: ast.ClassDef) -> Dict[str, ast.stmt]:
    """A stub class's methods and attributes, by name."""
    members: Dict[str, ast.stmt] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            members[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members[node.target.id] = node
    return members


def bound_members(cls: type) -> Set[str]:
    """What a class of _C defines itself, less what every class has; for
    an enum, its values."""
    if "__entries" in vars(cls):  # a pybind11 enum
        return set(cls.__members__)
    generic = set(vars(object)) | {"__module__", "__dict__", "__weakref__"} | PYBIND_INTERNAL
    return set(vars(cls)) - generic


def test_stub_declares_every_name_of_the_extension():
    from api_tracer import _C

    stub = stub_declarations()
    bound = {name for name in vars(_C) if not (name.startswith("__") and name.endswith("__"))}
    problems = [f"{name}: bound in _C, not declared in _C.pyi" for name in sorted(bound - set(stub))]
    problems += [f"{name}: declared in _C.pyi, not in _C" for name in sorted(set(stub) - bound)]
    for name, node in sorted(stub.items()):
        if not isinstance(node, ast.ClassDef) or name not in bound:
            continue
        cls = getattr(_C, name)
        declared = stub_members(node)
        problems += [
            f"{name}.{m}: bound in _C, not declared in _C.pyi" for m in sorted(bound_members(cls) - set(declared))
        ]
        problems += [f"{name}.{m}: declared in _C.pyi, not in _C" for m in sorted(declared) if not hasattr(cls, m)]
    assert not problems, "\n".join(problems)


def parse_signature(line: str) -> ast.arguments:
    """The parameters of `name(...)`, read as a def's."""
    function = ast.parse(f"def {line}: ...").body[0]
    assert isinstance(function, ast.FunctionDef)
    return function.args


def documented_signature(obj: object, name: str) -> Optional[ast.arguments]:
    """The parameters `obj` documents: a slot wrapper's text signature, or
    the `name(...)` that begins a pybind11 (or hand-written) docstring."""
    text = getattr(obj, "__text_signature__", None)
    if text:
        line = name + text.replace("$", "")  # ($self, /, *args) -> name(self, /, *args)
    else:
        doc = getattr(obj, "__doc__", None) or ""
        if not doc.startswith(name + "("):
            return None
        depth = 0
        for end, ch in enumerate(doc):  # noqa: B007 - `end` is read after the loop
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == ")" and depth == 0:
                break
        line = doc[: end + 1]
    return parse_signature(line)


def parameters(args: ast.arguments) -> List[tuple]:
    """(kind, name, has a default) per parameter, a leading self left out.
    Positional-only parameters, and the ones pybind11 calls argN (it was
    given no name), take no keyword: their names do not matter."""
    positional = args.posonlyargs + args.args
    has_default = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    out = []
    for i, (arg, default) in enumerate(zip(positional, has_default)):
        if i == 0 and arg.arg == "self":
            continue
        if i < len(args.posonlyargs) or re.fullmatch(r"arg\d+", arg.arg):
            out.append(("positional-only", None, default))
        else:
            out.append(("positional", arg.arg, default))
    if args.vararg:
        out.append(("*args", None, False))
    out += [("keyword-only", arg.arg, default is not None) for arg, default in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append(("**kwargs", None, False))
    return out


def stub_functions() -> Dict[str, Tuple[ast.FunctionDef, object]]:
    """Each function and method _C.pyi declares, by qualified name, with
    what _C binds under that name (a class that documents no __init__ of
    its own stands for it: ApiWrapper's docstring begins with its call)."""
    from api_tracer import _C

    out = {}
    for name, node in stub_declarations().items():
        if isinstance(node, ast.FunctionDef):
            out[name] = (node, getattr(_C, name))
            continue
        if not isinstance(node, ast.ClassDef):
            continue  # a constant
        cls = getattr(_C, name)
        for member, m in stub_members(node).items():
            if isinstance(m, ast.FunctionDef):
                own = member != "__init__" or "__init__" in vars(cls)
                bound = inspect.getattr_static(cls, member) if own else cls
                out[f"{name}.{member}"] = (m, bound.__func__ if isinstance(bound, staticmethod) else bound)
    return out


def test_stub_parameters_are_the_extensions():
    problems, unsigned = [], set()
    for qualname, (node, obj) in sorted(stub_functions().items()):
        is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
        if is_property or inspect.isdatadescriptor(obj):
            if is_property != inspect.isdatadescriptor(obj):
                problems.append(f"{qualname}: a property in one of _C and _C.pyi, a method in the other")
            continue
        name = getattr(obj, "__name__", qualname.rpartition(".")[2])
        bound = documented_signature(obj, name)
        if bound is None:
            unsigned.add(qualname)
        elif parameters(bound) != parameters(node.args):
            problems.append(f"{qualname}: _C has {parameters(bound)},\n    _C.pyi has {parameters(node.args)}")
    assert not problems, "\n".join(problems)
    assert unsigned == UNSIGNED, "no signature in _C's docstrings to check _C.pyi against"


def test_stub_parameters_checks_what_it_must():
    from api_tracer import _C

    def args(line: str) -> List[tuple]:
        return parameters(parse_signature(line))

    assert args("f(self, a, b=1, *c, d, e=2, **f)") == [
        ("positional", "a", False),
        ("positional", "b", True),
        ("*args", None, False),
        ("keyword-only", "d", False),
        ("keyword-only", "e", True),
        ("**kwargs", None, False),
    ]
    assert args("f(arg0: str)") == args("f(api: str, /)") != args("f(api: str)")
    pybind11_doc = documented_signature(_C.record, "record")
    assert pybind11_doc is not None and parameters(pybind11_doc) == args("f(level, api, args, kwargs=None)")
    slot = documented_signature(vars(_C.ApiWrapper)["__get__"], "__get__")  # a text signature
    assert slot is not None and parameters(slot) == args("f(self, instance, owner=None, /)")


# -- docs/design.md's layout ----------------------------------------------------

DESIGN = ROOT / "docs" / "design.md"
LAID_OUT = (
    "csrc",
    "include",
    "src/api_tracer",
    "src/pytest_api_tracer",
)  # the folders whose every file the layout names


def layout_entries(text: str) -> Dict[str, str]:
    """What the Layout section names: `folder/name` (a name may be a
    pattern, `*_test.cc`) -> the line. A folder is a `### `folder/`` heading;
    its entries are the backquoted names that begin a `- ` item, up to the
    colon."""
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    entries, folder = {}, None
    for line in section.splitlines():
        if line.startswith("### "):
            folder = re.match(r"### `([^`]+/)`", line).group(1)
        elif line.startswith("- `"):
            assert folder, f"an entry before any folder: {line}"
            for name in re.findall(r"`([^`]+)`", line.partition(":")[0]):
                entries[folder + name] = line
    return entries


def laid_out_files() -> List[str]:
    """Every file of LAID_OUT, less what the build makes (_C*.so, caches)."""
    files = []
    for top in LAID_OUT:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".so":
                files.append(path.relative_to(ROOT).as_posix())
    return files


def test_design_layout_names_every_file():
    entries = layout_entries(DESIGN.read_text(encoding="utf-8"))
    files = laid_out_files()
    missing = [f for f in files if not any(fnmatch.fnmatchcase(f, e) for e in entries)]
    stale = [e for e in entries if not any(fnmatch.fnmatchcase(f, e) for f in files)]
    assert not missing and not stale, (
        f"docs/design.md's Layout does not name: {', '.join(missing) or '-'}; "
        f"names what is not there: {', '.join(stale) or '-'}"
    )


def test_design_layout_reads_what_it_must():
    text = (
        "\n## Layout\n\n### `csrc/core/`: C++\n\n- `key.h`, `key.cc`: keys, see `value.h`.\n"
        "  `format.h` (a continuation line)\n- `*_test.cc`: tests\n\n## Next\n- `later.h`: not the layout\n"
    )
    assert set(layout_entries(text)) == {"csrc/core/key.h", "csrc/core/key.cc", "csrc/core/*_test.cc"}
    files = laid_out_files()
    assert (
        "csrc/core/key.h" in files
        and "src/api_tracer/cli/__init__.py" in files
        and "include/api_tracer/tracer.h" in files
        and "src/pytest_api_tracer/options.py" in files
    )
    assert not any(f.endswith(".so") for f in files)
