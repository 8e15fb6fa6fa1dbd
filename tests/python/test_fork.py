"""Processes forked while other threads open and close datasets read correctly and exit: the threads that
datasets reuse (util::ThreadPool::acquire) are never joined or handed out in a child that does not have them.

Oracle: the NumPy array written here.
"""

from __future__ import annotations

import os
import threading
import time

import hzio
import numpy as np


def test_children_forked_during_opens_and_closes_read_and_exit(tmp_path):
    path = tmp_path / "d.idx"
    a = np.arange(16 * 32 * 32, dtype=np.float32).reshape(16, 32, 32)
    with hzio.create(path, shape=a.shape, fields={"v": "float32"}, bits_per_block=8) as ds:
        ds.write(a)
    stop = threading.Event()

    def churn():  # keeps the process's idle pools changing while the main thread forks
        while not stop.is_set():
            with hzio.open(path) as d:
                d[0:4, 0:4, 0:4]

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        # Many forks: a lock another thread holds at the moment of a fork is a narrow window (a shared
        # HzSpace's table lock hung about 1 child in 500 before it was held across forks).
        for _ in range(500):
            pid = os.fork()
            if pid == 0:  # the child: open, read (with threads of its own), close, exit
                code = 1
                try:
                    with hzio.open(path) as d:
                        code = 0 if np.array_equal(d[2:9, 3:30, 1:17], a[2:9, 3:30, 1:17]) else 3
                finally:
                    os._exit(code)
            deadline = time.monotonic() + 30.0
            while True:  # a child that deadlocked must fail the test, not hang it
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    raise AssertionError("a forked child did not exit within 30 s")
                time.sleep(0.001)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        stop.set()
        worker.join()
