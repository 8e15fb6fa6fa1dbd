"""The Python interpreter in which test_docs.py runs the examples of one Markdown file, block after block.

Started as ``python docs_session.py FD`` in the page's working directory. Reads one JSON request per line on
stdin (``{"path", "line", "code"}``: a block and the Markdown line of its first line of code), runs its
top-level statements one by one in one shared namespace, and answers on file descriptor FD with one JSON
line: each statement's Markdown lines and what it wrote to stdout and stderr (captured at the file
descriptors, so C code and child processes are included), and the traceback of the first error, if any.
Tracebacks name the Markdown file and its lines.
"""

import ast
import json
import os
import sys
import tempfile
import traceback


def captured(run):
    """Run ``run()`` with file descriptors 1 and 2 redirected; return (stdout, stderr, traceback or None)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        error = None
        try:
            run()
        except BaseException as e:  # SystemExit and KeyboardInterrupt in an example are errors too
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next      # the frames of this file are not the example's
            error = "".join(traceback.format_exception(type(e), e, tb))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return (out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), error)


def run_block(request, namespace):
    """Run one block's statements; stop at the first that raises."""
    answer = {"statements": [], "error": None, "error_line": request["line"]}
    try:
        tree = ast.parse(request["code"], filename=request["path"])
    except SyntaxError as e:
        answer["error"] = "".join(traceback.format_exception_only(type(e), e))
        answer["error_line"] = request["line"] + (e.lineno or 1) - 1
        return answer
    ast.increment_lineno(tree, request["line"] - 1)
    for stmt in tree.body:
        code = compile(ast.Module(body=[stmt], type_ignores=[]), request["path"], "exec")
        out, err, error = captured(lambda: exec(code, namespace))
        answer["statements"].append({"line": stmt.lineno, "end": stmt.end_lineno, "out": out, "err": err})
        if error:
            answer["error"], answer["error_line"] = error, stmt.lineno
            break
    return answer


def main():
    replies = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
    sys.path[0] = os.getcwd()            # as for `python script.py` in the page's directory, not this one
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    for line in sys.stdin:
        answer = run_block(json.loads(line), namespace)
        replies.write(json.dumps(answer) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
