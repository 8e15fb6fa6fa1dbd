"""Running the steps of one Markdown page in an empty directory and collecting what went wrong (test_docs.py).

``run_page(path, workdir)`` runs the page's Python blocks in one interpreter (``docs_session.py``), saves
and runs its scripts, runs its shell commands, and returns the failures, each naming the page, the line of
the block and the error. ``run_native(path, workdir, toolchain)`` builds and runs its C, C++ and Fortran
blocks. Child processes run in sessions of their own and none outlives the call.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import docs_blocks
import docs_native
import hzio

HERE = Path(__file__).resolve().parent
TIMEOUT = 300                       # seconds for one block, command or program
SERVE_SECONDS = "1"                 # `hzio serve` runs this long (--exit-after) unless the page says
NATIVE_RANKS = 3                    # ranks of an MPI program whose page does not say how many
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"}


def environment() -> dict[str, str]:
    """The pages' commands run as written: Open MPI may run as root and oversubscribe (from the environment,
    not flags), and ``hzio``/``python`` are this interpreter's."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", MPLBACKEND="Agg")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONUNBUFFERED", None)   # unbuffered ranks write a line in pieces, which mpiexec interleaves
    return env


def mpiexec() -> str | None:
    return shutil.which(os.environ.get("HZIO_MPIEXEC") or "mpiexec")


def mpi_missing() -> str:
    """Why the MPI examples cannot run here ("" when they can)."""
    if mpiexec() is None:
        return "mpiexec is not installed"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    return "" if getattr(hzio._core, "with_mpi", False) else "hzio was built without MPI"


def hzio_command() -> list[str]:
    script = Path(sys.executable).parent / "hzio"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hzio"]


def run(cmd: list[str], cwd: Path, timeout: float = TIMEOUT) -> tuple[int | None, str, str]:
    """Run a command in a session of its own; (exit code or None on timeout, stdout, stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code, out, err


def describe(cmd: list[str], code: int | None, out: str, err: str) -> str:
    status = f"timed out after {TIMEOUT} s" if code is None else f"exit code {code}"
    return f"$ {shlex.join(cmd)}\n{status}\nstdout (end):\n{out[-2000:]}\nstderr (end):\n{err[-2000:]}"


class Session:
    """The page's Python interpreter (docs_session.py), started on first use."""

    def __init__(self, workdir: Path):
        self.workdir, self.proc, self.replies = workdir, None, None

    def run(self, path: Path, line: int, code: str) -> dict:
        if self.proc is None:
            read_end, write_end = os.pipe()
            self.log = tempfile.TemporaryFile("w+", encoding="utf-8")
            self.proc = subprocess.Popen([sys.executable, str(HERE / "docs_session.py"), str(write_end)],
                                         cwd=self.workdir, env=environment(), stdin=subprocess.PIPE,
                                         stdout=self.log, stderr=self.log, text=True, pass_fds=(write_end,),
                                         start_new_session=True)
            os.close(write_end)
            self.replies = os.fdopen(read_end, "r", encoding="utf-8")
        self.proc.stdin.write(json.dumps({"path": str(path), "line": line, "code": code}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.replies], [], [], TIMEOUT)
        reply = self.replies.readline() if ready else ""
        if not reply:
            self.log.seek(0)
            return {"statements": [], "error_line": line,
                    "error": f"the interpreter died or took over {TIMEOUT} s\n{self.log.read()[-3000:]}"}
        return json.loads(reply)

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.replies.close()
            self.log.close()


class PageRun:
    """One page's steps in one empty directory; ``failures`` collects what went wrong."""

    def __init__(self, path: Path, workdir: Path):
        self.path, self.workdir = path, workdir
        self.failures: list[tuple[int, str]] = []     # (line of the block, message)
        self.not_run: list[str] = []                    # MPI examples, where MPI is missing
        self.session = Session(workdir)

    def fail(self, block: docs_blocks.Block, message: str, line: int | None = None):
        at = f"{self.path.name}:{block.line}" + (f" (line {line})" if line and line != block.line else "")
        self.failures.append((block.line, f"{at}: {block.lang or 'block'} block: {message}"))

    def session_block(self, step: docs_blocks.Step) -> bool:
        block = step.block
        answer = self.session.run(self.path, block.code_line, block.code)
        shown = docs_blocks.comment_expectations(block.code, block.code_line)
        for st in answer["statements"]:
            want = shown.get(st["line"])
            if want and st["out"].strip() and not docs_blocks.matches(want[1], st["out"], want[2]):
                self.fail(block, f"prints {st['out'].strip()!r}, the comment shows {want[1]!r}", want[0])
        if answer["error"]:
            err = "".join(st["err"] for st in answer["statements"])[-2000:]
            self.fail(block, f"raised\n{answer['error']}{err}", answer["error_line"])
            return False
        if step.expected is not None:
            self.check_listing(step, "".join(st["out"] for st in answer["statements"]), any_order=False)
        return True

    def check_listing(self, step: docs_blocks.Step, out: str, any_order: bool):
        want = step.expected.code
        if not docs_blocks.lines_match(want, out, any_order):
            order = " (in any order)" if any_order else ""
            self.fail(step.block, f"prints\n{out}but the output at {step.expected.where()} shows{order}\n{want}")

    def script(self, step: docs_blocks.Step) -> bool:
        block = step.block
        (self.workdir / step.script).write_text(block.code, encoding="utf-8")
        if step.action == "script-only":
            return True
        cmd = [sys.executable, step.script]
        if step.ranks:
            if mpi_missing():
                self.not_run.append(f"{block.where()}: {mpi_missing()}")
                return True
            cmd = [mpiexec(), "-n", str(step.ranks), *cmd]
        code, out, err = run(cmd, self.workdir)
        if code != 0:
            self.fail(block, f"saved as {step.script} (its line 1 is line {block.code_line}) and run:\n"
                      + describe(cmd, code, out, err))
            return False
        if step.expected is not None:
            self.check_listing(step, out, any_order=step.ranks > 1)
        return True

    def shell(self, step: docs_blocks.Step) -> bool:
        block = step.block
        console = block.lang in ("console", "shell-session")
        for offset, text in logical_lines(block.code):
            if console and not text.startswith("$ "):
                continue
            line = block.code_line + offset
            try:
                argv = shlex.split(text[2:] if console else text, comments=True)
            except ValueError as e:
                self.fail(block, f"cannot parse {text!r}: {e}", line)
                return False
            if not argv:
                continue
            if Path(argv[0]).name in ("mpiexec", "mpirun") and mpi_missing():
                self.not_run.append(f"{self.path.name}:{line}: {mpi_missing()}")
                continue
            cmd, problem = command(argv)
            if problem:
                self.fail(block, f"{problem}: {text!r} (run it, or mark the block "
                          "<!-- docs-test: skip (reason) -->)", line)
                return False
            code, out, err = run(cmd, self.workdir)
            if code != 0:
                self.fail(block, describe(cmd, code, out, err), line)
                return False
            if Path(argv[0]).name == "hzio" and argv[1:2] == ["serve"] and "http://" not in out:
                self.fail(block, "hzio serve printed no URL\n" + describe(cmd, code, out, err), line)
        return True

    def run(self) -> list[str]:
        """Run the page; its failures in page order."""
        steps = docs_blocks.plan(docs_blocks.read_blocks(self.path))
        for step in steps:
            for problem in step.problems:
                self.fail(step.block, problem)
        try:
            for step in steps:
                if step.problems or step.action in ("skip", "listing", "native"):
                    continue
                handler = {"session": self.session_block, "script": self.script, "script-only": self.script,
                           "shell": self.shell}[step.action]
                if not handler(step):
                    break           # later blocks build on this one
        finally:
            self.session.close()
        return [message for _, message in sorted(self.failures, key=lambda f: f[0])]


def logical_lines(code: str):
    """(offset of the first line, text) of each command, with backslash continuations joined."""
    pending, start = "", 0
    for k, ln in enumerate(code.splitlines()):
        if not pending:
            start = k
        if ln.rstrip().endswith("\\"):
            pending += ln.rstrip()[:-1] + " "
            continue
        yield start, (pending + ln).strip()
        pending = ""


def command(argv: list[str]) -> tuple[list[str], str]:
    """The command line to run for a page's ``argv``, or a reason why the harness cannot run it."""
    bad = [a for a in argv if a in SHELL_OPERATORS or "$(" in a or "`" in a]
    if bad:
        return [], f"shell syntax ({bad[0]}) is not run by the harness"
    name = Path(argv[0]).name
    if name == "hzio":
        cmd = hzio_command() + argv[1:]
        if argv[1:2] == ["serve"]:
            if not any(a.startswith("--exit-after") for a in argv):
                cmd += ["--exit-after", SERVE_SECONDS]
            if not any(a.startswith("--port") for a in argv):
                cmd += ["--port", "0"]      # never a port another program holds
        return cmd, ""
    if name in ("python", "python3"):
        return [sys.executable, *argv[1:]], ""
    if name in ("mpiexec", "mpirun"):
        rest = [sys.executable if Path(a).name in ("python", "python3") else a for a in argv[1:]]
        return [mpiexec(), *rest], ""
    return [], f"the harness does not run {name!r} commands"


def run_native(path: Path, workdir: Path, toolchain: docs_native.Toolchain) -> tuple[list[str], list[str]]:
    """Build and run every C, C++ and Fortran block of a page (each in its own empty folder). Returns the
    failures, and the programs not run: MPI ones without mpiexec, Fortran ones without hzio's modules."""
    failures, not_run = [], []
    steps = docs_blocks.plan(docs_blocks.read_blocks(path))
    for k, step in enumerate(s for s in steps if s.action == "native"):
        block, where = step.block, f"{path.name}:{step.block.line}: {step.block.lang} block"
        if docs_native.SUFFIX.get(block.lang) == ".f90" and not docs_native.fortran_flags(toolchain, block.code):
            not_run.append(f"{where}: hzio's Fortran modules are not built in {toolchain.origin}")
            continue
        folder = workdir / f"native{k}"
        folder.mkdir()
        exe, text = docs_native.build(toolchain, block.lang, block.code, folder, "example")
        if exe is None:
            failures.append(f"{where}: does not build with {toolchain.origin}\n{text[-4000:]}")
            continue
        mpi = docs_native.is_mpi(block.code)
        cmd = [str(exe)]
        if mpi:
            if mpiexec() is None:
                not_run.append(f"{where}: mpiexec is not installed")
                continue
            cmd = [mpiexec(), "-n", str(step.ranks or NATIVE_RANKS), *cmd]
        code, out, err = run(cmd, folder)
        if code != 0:
            failures.append(f"{where}: fails\n{describe(cmd, code, out, err)}")
        elif step.expected is not None and not docs_blocks.lines_match(step.expected.code, out, any_order=mpi):
            failures.append(f"{where}: prints\n{out}but the output at {step.expected.where()} shows\n"
                            f"{step.expected.code}")
    return failures, not_run
