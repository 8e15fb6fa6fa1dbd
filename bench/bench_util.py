"""Helpers shared by the Python benchmarks: machine facts, page-cache control, durable flushes and timing.

Nothing here knows about hzio or OpenVisus; ``write_read_bench.py`` builds its cases on top of it.
"""

import json
import os
import platform
import shutil
import statistics
import subprocess
import time


def machine_facts(directory):
    """Return facts that change how a benchmark reads: cores, memory, disk, load and versions.

    Parameters
    ----------
    directory : str
        The benchmark's scratch folder; its file system's free space is reported.

    Returns
    -------
    dict
        JSON-ready values; memory and disk in GiB, ``load`` as the 1, 5 and 15 minute averages.

    Examples
    --------
    >>> sorted(machine_facts("."))[:3]
    ['cores_online', 'cores_usable', 'cpu_model']
    """
    meminfo = _meminfo_kib()
    usage = shutil.disk_usage(directory)
    return {
        "cores_online": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "mem_total_gib": round(meminfo.get("MemTotal", 0) / 2**20, 1),
        "mem_available_gib": round(meminfo.get("MemAvailable", 0) / 2**20, 1),
        "disk_free_gib": round(usage.free / 2**30, 1),
        "disk_device": _device_of(directory),
        "load": [round(x, 2) for x in os.getloadavg()],
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _meminfo_kib():
    values = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, rest = line.split(":", 1)
            values[key] = int(rest.split()[0])
    return values


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _device_of(directory):
    out = subprocess.run(["df", "--output=source,fstype", directory], capture_output=True, text=True)
    lines = out.stdout.split("\n")
    return " ".join(lines[1].split()) if out.returncode == 0 and len(lines) > 1 else "unknown"


def uptime_line():
    """Return the output of ``uptime`` (load averages as the shell shows them)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def drop_page_cache():
    """Write back dirty pages, then drop the page cache so the next read comes from the disk.

    Returns
    -------
    bool
        False when the kernel refused (not root, or a container without access); reads are then warm.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def fsync_tree(path):
    """fsync every regular file under ``path`` (a folder) or ``path`` itself (a file); return the count."""
    paths = [path] if os.path.isfile(path) else [
        os.path.join(root, name) for root, _, names in os.walk(path) for name in names]
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return len(paths)


def tree_bytes(path):
    """Total size in bytes of the regular files under ``path`` (or of ``path`` if it is a file)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, n)) for root, _, names in os.walk(path) for n in names)


def timed(fn, *args):
    """Call ``fn(*args)`` and return ``(seconds, result)`` measured with ``time.perf_counter``."""
    t0 = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t0, result


def summarize(seconds, nbytes):
    """Return the median, min and max of ``seconds`` and the median throughput in MiB/s.

    Examples
    --------
    >>> summarize([2.0, 1.0, 4.0], 2**20)["mib_per_s"]
    0.5
    """
    median = statistics.median(seconds)
    return {"seconds": [round(s, 4) for s in seconds], "median_s": round(median, 4), "min_s": round(min(seconds), 4),
            "max_s": round(max(seconds), 4), "mib_per_s": round(nbytes / 2**20 / median, 1)}


def write_json(path, report):
    """Write a benchmark's report as indented JSON to ``path`` (folders made as needed) and say so."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {path}")
