"""Runs the C API test with a URL: serves a folder over HTTP on 127.0.0.1 (tests/python/web_server.py,
aiohttp, in a thread that ends with this script) and runs `c_api_test FOLDER/data URL-of-data.idx`, so
that the test reads from C, over HTTP, the dataset it wrote.

Usage: serve_and_run.py C_API_TEST FOLDER. Exits with the test's status.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from web_server import WebServer  # noqa: E402

binary, folder = sys.argv[1], Path(sys.argv[2])
shutil.rmtree(folder, ignore_errors=True)
folder.mkdir(parents=True)
with WebServer(folder) as server:
    run = subprocess.run([binary, str(folder / "data"), f"{server.url}/data.idx"], timeout=300, env=os.environ)
sys.exit(run.returncode)
