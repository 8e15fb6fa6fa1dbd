"""The fenced code blocks of a Markdown page, what each one is for, and the output the page shows for it.

Used by test_docs.py, whose docstring states the rules. ``read_blocks`` parses a page, ``plan`` turns its
blocks into steps (run in the file's Python session, save and run as a script, run shell commands, compile,
or nothing), and ``comment_expectations`` / ``matches`` / ``lines_match`` compare printed output with
what the page shows.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = {"python", "py", "python3"}
SHELL = {"sh", "bash", "shell", "console", "shell-session"}
NATIVE = {"c", "cpp", "c++", "cxx", "cc", "fortran", "f90", "cmake"}
LISTING = {"", "text", "txt", "idx", "json", "output", "ebnf", "grammar", "diff"}

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<word>[a-z]+)\s*(?P<rest>.*?)\s*(-->)?\s*$")
# A command that runs a script: `mpiexec -n 3 python ex.py`, `.venv/bin/python write.py`.
SCRIPT_COMMAND = re.compile(r"`(?P<cmd>(?:(?:mpiexec|mpirun)\s+-(?:n|np)\s+(?P<ranks>\d+)\s+)?"
                            r"(?:\S*/)?python3?\s+(?P<name>[\w.-]+\.py))`")
OUTPUT_INTRO = re.compile(r"^Output\b")
RANKS = re.compile(r"`(?:mpiexec|mpirun)\s+-(?:n|np)\s+(\d+)\s")
COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
            ast.AsyncFunctionDef, ast.ClassDef) + ((ast.Match,) if hasattr(ast, "Match") else ())


@dataclass
class Block:
    """One fenced block: ``line`` is its opening fence (1-based), ``code_line`` its first line of code."""

    path: Path
    line: int
    lang: str
    code: str
    code_line: int
    before: str = ""        # the paragraph right before the block (prose only)
    after: str = ""         # the paragraph right after it
    directive: str = ""     # "skip" or "setup" (an HTML comment above it, or around it)
    reason: str = ""

    @property
    def kind(self) -> str:
        for name, langs in (("python", PYTHON), ("shell", SHELL), ("native", NATIVE), ("listing", LISTING)):
            if self.lang in langs:
                return name
        return "unknown"

    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


@dataclass
class Step:
    """What the harness does with one block. ``action``: session, script, shell, native, skip or listing."""

    block: Block
    action: str
    script: str = ""                # file name for scripts
    ranks: int = 0                  # mpiexec ranks for scripts (0: run with python), native MPI programs
    expected: Block | None = None   # the listing the page shows as this block's output
    problems: list[str] = field(default_factory=list)


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order, with the prose around it and its directive.

    Blocks inside an HTML comment are invisible to readers: they are ignored, except inside a
    ``<!-- docs-test: setup`` comment, where they run like the others (setup the page does not show; the
    prose around it belongs to the visible blocks).
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    visible: list[Block] = []
    prose: list[str] = []
    comment = ""                     # "", "setup" or "other" while inside an HTML comment
    i = 0
    while i < len(lines):
        text, m = lines[i], FENCE.match(lines[i])
        if not m:
            opening = text.lstrip().startswith("<!--")
            prose.append("" if comment or opening else text)
            if comment:
                comment = "" if "-->" in text else comment
            elif opening and "-->" not in text:
                d = DIRECTIVE.match(text)
                comment = "setup" if d and d.group("word") == "setup" else "other"
            i += 1
            continue
        block, i = _fenced(path, lines, i, m)
        if comment == "other":
            continue
        blocks.append(block)
        if comment == "setup":
            block.directive, block.reason = "setup", "hidden setup"
            continue
        block.before = paragraph(prose, first=False)
        if visible:
            visible[-1].after = paragraph(prose, first=True)
        above = next((ln for ln in reversed(lines[:block.line - 1]) if ln.strip()), "")
        d = DIRECTIVE.match(above)
        if d:
            block.directive, block.reason = d.group("word"), d.group("rest").strip()
        visible.append(block)
        prose = []
    if visible:
        visible[-1].after = paragraph(prose, first=True)
    return blocks


def _fenced(path: Path, lines: list[str], i: int, m: re.Match) -> tuple[Block, int]:
    """The block whose opening fence is line ``i`` (0-based), and the index of the line after it."""
    indent, fence = len(m.group("indent")), m.group("fence")
    info = m.group("info").strip().split()
    closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    body, k = [], i + 1
    while k < len(lines) and not closing.match(lines[k]):
        text = lines[k]
        body.append(text[indent:] if not text[:indent].strip() else text.lstrip())
        k += 1
    return Block(path, i + 1, info[0].lower() if info else "", "\n".join(body) + "\n", i + 2), k + 1


def paragraph(lines: list[str], first: bool) -> str:
    """The first or last paragraph (lines between blank lines) of some prose, joined with spaces."""
    paras, current = [], []
    for ln in lines + [""]:
        if ln.strip():
            current.append(ln.strip())
        elif current:
            paras.append(" ".join(current))
            current = []
    if not paras:
        return ""
    return paras[0] if first else paras[-1]


def script_command(block: Block) -> re.Match | None:
    """The command that runs ``block`` as a script: named in the paragraph that introduces it (ending with
    ``:``) or in the paragraph after it (not ending with ``:``, which would introduce the next block)."""
    if block.before.endswith(":"):
        m = SCRIPT_COMMAND.search(block.before)
        if m:
            return m
    if block.after and not block.after.endswith(":"):
        return SCRIPT_COMMAND.search(block.after)
    return None


def plan(blocks: list[Block]) -> list[Step]:
    """The steps for a page's blocks, in order. Problems (a block that cannot run) are kept on the step."""
    steps: list[Step] = []
    for k, block in enumerate(blocks):
        kind = block.kind
        step = Step(block, kind if kind in ("shell", "native", "listing") else "session")
        if block.directive == "skip":
            step.action = "skip"
            if not block.reason.startswith("(") or len(block.reason) < 4:
                step.problems.append("a skip needs a reason: <!-- docs-test: skip (why) -->")
        elif block.directive not in ("", "setup"):
            step.problems.append(f"unknown directive docs-test: {block.directive}")
        elif kind == "unknown":
            step.problems.append(f"unknown language {block.lang!r}: add it to one of the sets of docs_blocks.py "
                                 "(listings are not run) or mark the block")
        elif kind == "python":
            cmd = script_command(block)
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            if cmd:
                step.action, step.script, step.ranks = "script", cmd.group("name"), int(cmd.group("ranks") or 0)
            elif nxt is not None and nxt.kind == "shell":
                name = next(iter(re.findall(r"\bpython3?\s+([\w.-]+\.py)\b", nxt.code)), "")
                if name:   # the shell block right after runs it
                    step.action, step.script = "script-only", name
        elif kind == "native":   # ranks named where the block is introduced, or by the paragraph after it
            cmd = (RANKS.search(block.before) if block.before.endswith(":") else None) or RANKS.search(block.after)
            step.ranks = int(cmd.group(1)) if cmd else 0
        if step.action in ("session", "script", "native") and k + 1 < len(blocks):
            nxt = blocks[k + 1]
            if nxt.kind == "listing" and OUTPUT_INTRO.match(block.after) and nxt.before == block.after:
                step.expected = nxt
        steps.append(step)
    return steps


# ---- expected output ---------------------------------------------------------------------------------


def comments_by_line(code: str, first_line: int) -> tuple[dict[int, str], dict[int, str]]:
    """Trailing comments (after code) and whole-line comments, by Markdown line number."""
    trailing, whole = {}, {}
    code_lines = code.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return trailing, whole
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        text = tok.string[1:].strip()
        target = whole if not code_lines[row - 1][:col].strip() else trailing
        target[first_line + row - 1] = text
    return trailing, whole


def comment_expectations(code: str, first_line: int) -> dict[int, tuple[int, str, bool]]:
    """The output a page shows in comments, per top-level statement (keyed by its first line).

    Values: (line of the comment, expected text, whether a remark may follow the output). A simple
    statement's trailing comment counts unless it starts with a lowercase letter (a remark); the
    whole-line comments right below a statement (no blank line between) continue it or are it.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    trailing, whole = comments_by_line(code, first_line)
    code_lines = code.splitlines()
    found = {}
    for stmt in tree.body:
        start, end = first_line + stmt.lineno - 1, first_line + stmt.end_lineno - 1
        parts, at = [], 0
        if not isinstance(stmt, COMPOUND) and end in trailing and not trailing[end][:1].islower():
            parts.append(trailing[end])
            at = end
        row = end + 1
        while row in whole and code_lines[row - first_line].startswith("#"):
            parts.append(whole[row])
            at = at or row
            row += 1
        if parts:   # a remark may follow a trailing comment's output, not an output of several lines
            found[start] = (at, " ".join(parts), row == end + 1)
    return found


def _pattern(expected: str) -> str:
    pieces = re.split(r"\.\.\.|…", expected)
    return ".*?".join(re.escape(p) for p in pieces)


def squash(text: str) -> str:
    """Whitespace runs to one space, ends stripped."""
    return " ".join(text.split())


def matches(expected: str, actual: str, remark_allowed: bool) -> bool:
    """Whether printed ``actual`` is what a comment shows: equal after squashing white space, ``...`` matching
    any text; with ``remark_allowed``, the comment may go on after the output with a remark that starts with
    a lowercase letter (``# ((32,), (32,), (64,)) here: blocks of 2^16 samples``)."""
    expected, actual = squash(expected), squash(actual)
    if re.fullmatch(_pattern(expected), actual, re.S):
        return True
    if remark_allowed:
        for cut in re.finditer(r" (?=[a-z])", expected):
            if re.fullmatch(_pattern(expected[:cut.start()]), actual, re.S):
                return True
    return False


def lines_match(expected: str, actual: str, any_order: bool) -> bool:
    """Whether printed lines are those of an output listing: line by line after squashing white space,
    ``...`` matching any text within a line; ``any_order`` (MPI ranks print in any order) compares them as
    a multiset."""
    want = [squash(ln) for ln in expected.splitlines() if ln.strip()]
    got = [squash(ln) for ln in actual.splitlines() if ln.strip()]
    if len(want) != len(got):
        return False
    if not any_order:
        return all(re.fullmatch(_pattern(w), g, re.S) for w, g in zip(want, got))
    free = list(got)
    for w in sorted(want, key=lambda s: ("..." in s or "…" in s, s)):
        hit = next((g for g in free if re.fullmatch(_pattern(w), g, re.S)), None)
        if hit is None:
            return False
        free.remove(hit)
    return True
