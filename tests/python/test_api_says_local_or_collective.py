"""Every public function says whether it is Local or Collective (STYLE.md): the C and C++ public headers
and the Python API.

* **Headers** (``include/hzio/*.h``, ``*.hpp``): each function declared outside a ``private:`` section
  has "Local" or "Collective" in the comment block right above it (a run of declarations shares the
  comment above the run), on its own line, or in the comment above its class or struct (a value type
  says so once for all its members).
* **Fortran** (``fortran/hzio_module.f90``, ``hzio_mpi_module.f90``): each module procedure not named
  private has "Local" or "Collective" in the comment lines right above it.
* **Python**: the names in ``hzio.__all__``, everything the public modules define themselves, and the
  public methods, properties and protocol methods (``__getitem__``, ``__enter__``, ``__array__``...) of
  their classes have "Local" or "Collective" in their docstring or in their class's docstring.

The oracle is the text of the headers and docstrings, read here with regular expressions and Python's
``inspect``, not hzio's own documentation tools.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import hzio

ROOT = Path(__file__).resolve().parents[2]
SAYS = re.compile(r"\b(Local|Collective)\b")
# A function declaration's start: return type, then a name and "(" (constructors have no return type).
DECL = re.compile(r"^(?:(?:static|virtual|inline|friend|explicit|constexpr|extern|const)\s+)*"
                  r"(?:[\w:<>,*&\s]+?[\s*&])?(~?[A-Za-z_]\w*)\s*\(")
NOT_FUNCTIONS = {"if", "while", "for", "switch", "return", "sizeof", "decltype", "static_assert", "alignas",
                 "defined", "typedef", "HZIO_RETURN_IF_ERROR", "assert"}
PROTOCOL = {"__getitem__", "__setitem__", "__enter__", "__exit__", "__array__", "__iter__", "__len__",
            "__contains__", "__call__", "__next__"}


def _undocumented_in_header(path: Path) -> list[str]:
    """Functions of a header whose comment, line or class comment says neither Local nor Collective."""
    lines = path.read_text().split("\n")
    missing = []
    # A stack of (class comment, access) for the classes and structs being read; "" for namespaces.
    scopes: list[tuple[str, str]] = []
    comment: list[str] = []  # the comment block above the current run of declarations
    in_block_comment = False
    pending_class = None  # a class head read, its "{" not yet
    depth_of: list[int] = []
    depth = 0
    in_decl = False  # inside a multi-line declaration
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if in_block_comment:
            comment.append(line)
            in_block_comment = "*/" not in line
            continue
        if line.startswith("/*"):
            comment.append(line)
            in_block_comment = "*/" not in line
            continue
        if line.startswith("//"):
            if not in_decl:
                comment.append(line)
            continue
        if not line or line.startswith("#"):
            if not line:
                comment = []
            continue
        code = line.split("//")[0]
        access = scopes[-1][1] if scopes else ""
        if re.match(r"^(public|private|protected)\s*:", code):
            if scopes:
                scopes[-1] = (scopes[-1][0], code.split(":")[0])
            comment = []
            continue
        head = re.match(r"^(?:template\s*<[^>]*>\s*)?(class|struct|union|enum)\b", code)
        if head and not code.rstrip().endswith(";"):
            pending_class = (" ".join(comment), "private" if head.group(1) == "class" else "public")
        m = DECL.match(code)
        is_function = (m and m.group(1) not in NOT_FUNCTIONS and not head and "=" not in code.split("(")[0]
                       and not in_decl and not code.startswith(("using", "typedef", "return", "}")))
        if is_function and access != "private":
            own = " ".join(comment) + " " + (line.split("//", 1)[1] if "//" in line else "")
            enclosing = " ".join(s[0] or "" for s in scopes)
            if not SAYS.search(own) and not SAYS.search(enclosing):
                missing.append(f"{path.relative_to(ROOT)}:{number}: {line[:90]}")
        if is_function or in_decl:
            in_decl = not (code.rstrip().endswith(";") or code.rstrip().endswith("}") or code.rstrip().endswith("{"))
        opened, closed = code.count("{"), code.count("}")
        for _ in range(opened):
            depth += 1
            if pending_class is not None:
                scopes.append(pending_class)
                depth_of.append(depth)
                pending_class = None
                comment = []
            elif is_function:
                depth_of.append(-depth)  # a function body: skipped below
        for _ in range(closed):
            if depth_of and abs(depth_of[-1]) == depth:
                if depth_of.pop() > 0:
                    scopes.pop()
            depth -= 1
        if code.rstrip().endswith(";") and not in_decl and not is_function:
            comment = []
    return missing


def test_every_function_of_the_public_headers_says_local_or_collective():
    headers = sorted((ROOT / "include" / "hzio").glob("*.h")) + sorted((ROOT / "include" / "hzio").glob("*.hpp"))
    assert len(headers) >= 8, headers
    missing = [m for h in headers for m in _undocumented_in_header(h)]
    assert not missing, "functions that say neither Local nor Collective:\n" + "\n".join(missing)


def test_every_public_fortran_procedure_says_local_or_collective():
    missing, checked = [], 0
    for name in ("hzio_module.f90", "hzio_mpi_module.f90"):
        lines = (ROOT / "fortran" / name).read_text().split("\n")
        private = set()
        for line in lines:
            if re.match(r"^\s*private\s*::", line, re.I):
                private |= {w.strip().lower() for w in line.split("::", 1)[1].replace("&", "").split(",")}
        inside_interface = False
        for number, line in enumerate(lines, 1):
            code = line.strip().lower()
            if re.match(r"^(abstract\s+)?interface\b", code):
                inside_interface = True
            elif code.startswith("end interface"):
                inside_interface = False
            m = None if inside_interface else re.match(r"^(?:recursive\s+)?(?:function|subroutine)\s+(\w+)", code)
            if not m or m.group(1) in private:
                continue
            checked += 1
            above = []
            for previous in reversed(lines[:number - 1]):
                if not previous.strip().startswith("!"):
                    break
                above.append(previous)
            if not SAYS.search(" ".join(above)):
                missing.append(f"fortran/{name}:{number}: {line.strip()[:90]}")
    assert checked >= 12, checked
    assert not missing, "Fortran procedures that say neither Local nor Collective:\n" + "\n".join(missing)


def _public_objects():
    """(qualified name, object, its class or None) of the Python API."""
    modules = [hzio] + [importlib.import_module(f"hzio.{m.name}") for m in pkgutil.iter_modules(hzio.__path__)
                        if not m.name.startswith("_") and m.name not in ("cli",)]
    seen = set()
    for module in modules:
        names = module.__all__ if module is hzio else [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if module is not hzio and getattr(obj, "__module__", None) != module.__name__:
                continue  # imported from elsewhere: checked where it is defined, when that is public
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj, None
                continue
            if issubclass(obj, BaseException):
                continue
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in PROTOCOL:
                    continue
                target = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(target):
                    yield f"{module.__name__}.{name}.{attr}", target, obj


def test_every_public_python_function_says_local_or_collective():
    import hzio.cli  # noqa: F401  (its main() is public; its command functions live in private modules)

    checked = list(_public_objects()) + [("hzio.cli.main", hzio.cli.main, None)]
    assert len(checked) > 100, len(checked)
    missing = [name for name, fn, cls in checked
               if not SAYS.search(inspect.getdoc(fn) or "") and not (cls and SAYS.search(inspect.getdoc(cls) or ""))]
    assert not missing, "public functions whose docstring says neither Local nor Collective:\n" + "\n".join(missing)
