"""Every public function says whether it is Local or Collective (STYLE.md): the C and C++ public headers
and the Python API.

* **Headers** (``include/hzio/*.h``, ``*.hpp``): each function declared outside a ``private:`` section
  has "Local" or "Collective" in the comment block right above it (declarations without a comment of
  their own, directly below another, share its comment), on its own line, or in the comment above its
  class or struct when that says it of the members ("Its members are Local").
* **Fortran** (``fortran/hzio_module.f90``, ``hzio_mpi_module.f90``): each module procedure not named
  private has "Local" or "Collective" in the comment lines right above it.
* **Python**: the names in ``hzio.__all__``, everything the public modules define themselves, and the
  public methods, properties and protocol methods (``__getitem__``, ``__enter__``, ``__array__``...) of
  their classes have "Local" or "Collective" in their docstring, or their class's docstring says it of its
  methods or members.

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
# A class comment covers its members only when it says so of them ("Its members are Local").
SAYS_OF_MEMBERS = re.compile(r"\b(members|methods)\b[^.]*\b(Local|Collective)\b"
                             r"|\b(Local|Collective)\b[^.]*\b(members|methods)\b")
NOT_FUNCTIONS = {"if", "while", "for", "switch", "return", "sizeof", "decltype", "static_assert", "alignas",
                 "defined", "typedef", "assert", "using", "throw", "case", "noexcept", "alignof"}
PROTOCOL = {"__getitem__", "__setitem__", "__enter__", "__exit__", "__array__", "__iter__", "__len__",
            "__contains__", "__call__", "__next__"}


def _declared_name(code: str) -> str | None:
    """The name a line declares as a function (``operator==`` for operators), or None: the identifier right
    before the first ``(`` outside template brackets, unless an ``=`` comes first (a variable's initializer)."""
    code = re.sub(r"\[\[[^\]]*\]\]", " ", code).strip()  # attributes
    if not code or code.startswith(("}", "{", ")", ":", ",", "#")):
        return None
    op = re.search(r"\boperator\s*(\(\)|\[\]|[^\s(]+)\s*\(", code)
    if op:
        return "operator" + op.group(1)
    depth = 0
    for i, ch in enumerate(code):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            return None
        elif ch == "(" and depth == 0:
            m = re.search(r"(~?[A-Za-z_]\w*)\s*$", code[:i])
            if not m or m.group(1) in NOT_FUNCTIONS or code.split()[0] in NOT_FUNCTIONS:
                return None
            return m.group(1)
    return None


def _undocumented_in_header(path: Path) -> list[str]:
    """Functions of a header whose own comment (or, in a run of declarations without comments of their own,
    the run's), trailing comment or class comment says neither Local nor Collective."""
    missing = []
    scopes: list[tuple[str, str]] = []  # per class or struct being read: (its comment, current access)
    kinds: list[str] = []  # per open brace: "class", "body" (of a function: skipped) or "other"
    above: list[str] = []  # the comment lines right above the current line
    run = ""  # the comment of the current run of declarations
    pending_class = None  # a class head's comment and default access, its "{" not yet read
    in_comment = in_decl = False
    in_trailing = False  # in a block comment begun after code: it belongs to that line, not to the next
    for number, raw in enumerate(path.read_text().split("\n"), 1):
        line = raw.strip()
        if in_trailing:
            in_trailing = "*/" not in line
            continue
        if in_comment:
            above.append(line)
            in_comment = "*/" not in line
            continue
        lead = re.match(r"^/\*.*?\*/\s*", line)  # a block comment, then code on the same line
        if lead and line[lead.end():]:
            above.append(lead.group(0))
            line = line[lead.end():]
        elif line.startswith("/*"):
            above.append(line)
            in_comment = "*/" not in line
            continue
        if line.startswith("//"):
            above.append(line)
            continue
        if not line or line.startswith("#"):
            if not line:
                above, run = [], ""
            continue
        code, trailing = (line.split("//", 1) + [""])[:2]
        trailing += " ".join(re.findall(r"/\*.*?\*/", code))
        code = re.sub(r"/\*.*?\*/", " ", code)
        if "/*" in code:  # a block comment that goes on to the next lines
            code, rest = code.split("/*", 1)
            trailing += " " + rest
            in_trailing = True
        code = code.strip()
        if re.fullmatch(r"template\s*<.*>", code):
            continue  # the declaration it introduces follows, under the same comment
        in_body = "body" in kinds
        if not in_body and not in_decl:
            access = scopes[-1][1] if scopes and kinds and kinds[-1] == "class" else "public"
            label = re.match(r"^(public|private|protected)\s*:", code)
            head = re.match(r"^(?:template\s*<.*>\s*)?(class|struct|union|enum)\b", code)
            name = None if label or head else _declared_name(code)
            if label:
                if scopes:
                    scopes[-1] = (scopes[-1][0], label.group(1))
                run = ""
            elif head and not code.endswith(";"):
                pending_class = (" ".join(above), "private" if head.group(1) == "class" else "public")
            elif name:
                own = " ".join(above) if above else run
                run = own
                if access != "private":
                    members = " ".join(c for c, _ in scopes if SAYS_OF_MEMBERS.search(c))
                    if not SAYS.search(own + " " + trailing) and not members:
                        missing.append(f"{path.relative_to(ROOT)}:{number}: {line[:90]}")
                in_decl = not code.endswith((";", "{", "}"))
            elif code.endswith(";"):
                run = ""
            above = []
        elif in_decl:
            in_decl = not code.endswith((";", "{", "}"))
        for ch in code:
            if ch == "{":
                if pending_class is not None:
                    kinds.append("class")
                    scopes.append(pending_class)
                    pending_class = None
                elif not in_body and (name or in_decl or code.startswith(":")) and not head:
                    kinds.append("body")
                    in_body = True
                else:
                    kinds.append("other")
            elif ch == "}" and kinds:
                if kinds.pop() == "class":
                    scopes.pop()
                in_body = "body" in kinds
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
            m = None if inside_interface else re.match(
                r"^(?:(?:recursive|pure|impure|elemental|module)\s+|"
                r"(?:integer|real|logical|character|complex|type|class)\s*(?:\([^)]*\))?\s+)*"
                r"(?:function|subroutine)\s+(\w+)", code)
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
    missing = [name for name, fn, cls in checked if not SAYS.search(inspect.getdoc(fn) or "")
               and not (cls and SAYS_OF_MEMBERS.search(inspect.getdoc(cls) or ""))]
    assert not missing, "public functions whose docstring says neither Local nor Collective:\n" + "\n".join(missing)
