"""Every example in README.md and docs/guide/*.md runs as written, and prints what the page shows.

The pages are found by name (README.md, then every docs/guide/*.md), so a new page is tested as soon as it
exists. Each page runs in an empty directory of its own. The rules, for whoever writes a page:

* **Languages.** ```python blocks run. ```sh, ```bash, ```shell and ```console blocks run their commands.
  ```c, ```cpp and ```fortran blocks are built against hzio and run (``docs_native.py``; ```cmake blocks
  are not built yet, so they must be marked). Blocks without a language, and ```text, ```idx, ```json,
  ```output, ```ebnf, ```grammar and ```diff blocks are listings (output, file contents, grammar) and
  never run. Any other language fails the test until it is added to one of the sets in docs_blocks.py.
* **Python.** A page's Python blocks run in order, in one interpreter (a fresh one per page), sharing
  their variables, as ``docs/guide/python.md`` says: "The examples below run in order, in an empty
  directory". A block that raises fails the test, and the page's later blocks do not run.
* **Scripts.** A Python block introduced by a paragraph ending with ":" that names a command like
  ```mpiexec -n 4 python write.py``` (or followed by a paragraph, not ending with ":", that names it) is
  saved under that name and run with it: under mpiexec with that many ranks, with ``python`` this
  interpreter. A Python block followed directly by a shell block that runs ``python NAME.py`` is saved
  as NAME.py for that block to run.
* **Shell.** Each line is one command (``\\`` continues it; ``#`` starts a comment; in ```console blocks
  only ``$ `` lines are commands). The harness runs ``hzio`` (also ``.venv/bin/hzio``), ``python`` and
  ``mpiexec``/``mpirun`` commands, with this interpreter's hzio and Python, and no other command, nor
  pipes or redirections. ``hzio serve`` gets ``--exit-after 1`` and ``--port 0`` unless the line says
  otherwise, and must print its URL. A command that exits with a non-zero status fails the test.
* **MPI.** Commands run with the environment that lets Open MPI run as root and start more ranks than
  there are cores (``OMPI_ALLOW_RUN_AS_ROOT``, ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM``,
  ``OMPI_MCA_rmaps_base_oversubscribe``), so the pages show commands as users type them. An MPI C, C++ or
  Fortran program runs on the ranks that its introducing paragraph or its "Output" paragraph names
  (```mpiexec -n 3 ./sim```), else on 3. Where mpiexec, mpi4py or hzio's MPI build is missing, everything
  else runs and the test reports the MPI examples as skipped.
* **Expected output in comments.** In a Python block run in the page's interpreter, a top-level simple
  statement's trailing comment shows what it prints (``print(x.shape)   # (32, 64, 128)``), and so do the
  whole-line comments right below any top-level statement (``# 9 (8, 8, 8) 1``). They are checked when
  the statement prints something: equal after squashing white space, ``...`` matching any text. A
  trailing comment that starts with a lowercase letter is a remark, not output, and a remark starting
  with a lowercase letter may follow the output (``# ((32,), (32, 32)) here: two blocks``).
* **Expected output in a listing.** A listing right after a runnable block, with one paragraph between
  them that starts with "Output", shows the block's whole output, line by line (``...`` matches any text
  within a line); for MPI runs the lines may come in any order.
* **Not run.** ``<!-- docs-test: skip (reason) -->`` on the line above a block keeps it from running;
  use it only for what must not run here (the setup script itself). A block inside an HTML comment
  that starts ``<!-- docs-test: setup`` is hidden from readers and runs in its place (files the page's
  commands need). Blocks inside other HTML comments are ignored.

Every failure names the page, the line of the block's opening fence (and of the statement or command)
and the error.
"""

from __future__ import annotations

from pathlib import Path

import docs_blocks
import docs_native
import docs_runner
import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]
NATIVE_PAGES = [p for p in PAGES if any(b.kind == "native" for b in docs_blocks.read_blocks(p))]


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_is_run_or_a_listing(page):
    problems = [f"{s.block.where()}: {p}" for s in docs_blocks.plan(docs_blocks.read_blocks(page))
                for p in s.problems]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_examples_run_as_written(page, tmp_path):
    workdir = tmp_path / "page"
    workdir.mkdir()
    run = docs_runner.PageRun(page, workdir)
    failures = run.run()
    assert not failures, "\n\n".join(failures)
    if run.not_run:
        pytest.skip("everything ran but the MPI examples: " + "; ".join(run.not_run))


@pytest.mark.parametrize("page", NATIVE_PAGES, ids=page_id)
def test_native_examples_build_and_run(page, tmp_path):
    toolchain = docs_native.find_toolchain()
    if toolchain is None:
        # A build tree without a libhzio the harness finds means the harness lost track of the build.
        assert not docs_native.plain_build_trees(), "build/ holds a build tree, but docs_native.py finds no libhzio"
        pytest.skip("no libhzio to build against: build hzio, or set HZIO_DOCS_CFLAGS and HZIO_DOCS_LIBS")
    failures, not_run = docs_runner.run_native(page, tmp_path, toolchain)
    assert not failures, "\n\n".join(failures)
    if not_run:
        pytest.skip("everything else ran; not run: " + "; ".join(not_run))


# ---- the harness itself: it must catch wrong pages --------------------------------------------------

BROKEN_PAGE = """# A page

```python
x = [1, 2, 3]
print(len(x))   # 3
print(x)        # [1, 2, 4]
```

Output:

```text
3
[1, 2, 3]
```

```python
print(x[5])
```

```python
print("never runs")
```
"""


def test_harness_reports_wrong_output_and_errors_with_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(BROKEN_PAGE, encoding="utf-8")
    (tmp_path / "work").mkdir()
    failures = docs_runner.PageRun(page, tmp_path / "work").run()
    assert len(failures) == 2, failures
    assert failures[0].startswith("page.md:3 (line 6): python block: prints '[1, 2, 3]'"), failures[0]
    assert failures[1].startswith("page.md:16 (line 17): python block: raised"), failures[1]
    assert "IndexError" in failures[1] and 'File "' + str(page) + '", line 17' in failures[1], failures[1]


def test_harness_checks_listings_scripts_and_refuses_what_it_cannot_run(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run with `python hello.py`:\n\n```python\nprint('hello')\nprint('world')\n```\n\n"
                    "Output:\n\n```\nworld\nhello\n```\n\n```sh\nls -l\n```\n\n```rust\nfn main() {}\n```\n\n"
                    "<!-- docs-test: skip (not here) -->\n```sh\nrm -rf /\n```\n\n<!-- docs-test: skip -->\n"
                    "```sh\nhzio info x.idx\n```\n", encoding="utf-8")
    (tmp_path / "work").mkdir()
    failures = docs_runner.PageRun(page, tmp_path / "work").run()
    assert (tmp_path / "work" / "hello.py").exists()
    assert len(failures) == 4, failures
    assert failures[0].startswith("page.md:3: python block: prints\nhello\nworld\nbut the output at page.md:10")
    assert failures[1].startswith("page.md:15 (line 16): sh block: the harness does not run 'ls' commands")
    assert failures[2].startswith("page.md:19: rust block: unknown language 'rust'")
    assert failures[3].startswith("page.md:29: sh block: a skip needs a reason")


HIDDEN_PAGE = """# Hidden blocks

<!-- docs-test: setup (a file the command needs)
```python
open("made.txt", "w").close()
```
-->
<!--
```python
open("ignored.txt", "w").close()
```
-->
```sh
python -c "import os; assert os.path.exists('made.txt') and not os.path.exists('ignored.txt')"
python -c "raise SystemExit(3)"
```
"""


def test_harness_runs_hidden_setup_ignores_other_comments_and_checks_exit_codes(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(HIDDEN_PAGE, encoding="utf-8")
    (tmp_path / "work").mkdir()
    failures = docs_runner.PageRun(page, tmp_path / "work").run()
    assert len(failures) == 1, failures
    assert failures[0].startswith("page.md:13 (line 15): sh block: $ ") and "exit code 3" in failures[0], failures


@pytest.mark.parametrize(("expected", "actual", "remark", "ok"), [
    ("(32, 64, 128)", "(32, 64, 128)\n", False, True),
    ("<hzio.Dataset '.../sim.idx' shape=(32, 64, 128) ...>", "<hzio.Dataset '/t/sim.idx' shape=(32, 64, 128) x>",
     False, True),
    ("((32,), (32,), (64,)) here: blocks of 2^16 samples", "((32,), (32,), (64,))", True, True),
    ("((32,), (32,), (64,)) here: blocks", "((32,), (32,), (64,))", False, False),
    ("(4, 2, 8) (4, 2, 8)", "(4, 2, 8)", True, False),
    ("1.02003e+06", "1020030.0", True, False),
    ("['a', 'b',  'c']", "['a', 'b', 'c']", False, True),
])
def test_comment_matching(expected, actual, remark, ok):
    assert docs_blocks.matches(expected, actual, remark) is ok


def test_listing_lines_of_mpi_runs_may_come_in_any_order():
    assert docs_blocks.lines_match("{...}\n1 a\n0 a\n", "{\"x\": 1}\n0 a\n1 a\n", any_order=True)
    assert not docs_blocks.lines_match("{...}\n1 a\n0 a\n", "{\"x\": 1}\n0 a\n1 a\n", any_order=False)
    assert not docs_blocks.lines_match("1 a\n0 a\n", "1 a\n1 a\n", any_order=True)


