"""Shared pytest fixtures for the hzio Python test suite.

Fixtures
--------
samples_dir
    The OpenVisus-written sample datasets.  Looked up as
    ``$HZIO_SHARED/interop/openvisus-samples`` (or ``$HZIO_SHARED`` itself if
    it holds the ``.idx`` files), else ``<repo>/../shared/interop/openvisus-samples``.
openvisus
    The imported ``OpenVisus`` module; the test is skipped when it is missing.
seed, rng
    A per-session seed (``HZIO_TEST_SEED`` overrides it), printed in the
    report header and by every test that uses it, and a numpy Generator
    derived from the seed and the test id.
sample_copy
    Copies one sample dataset into ``tmp_path`` (writable, for damage tests).

Notes
-----
This directory is put on ``sys.path`` so the test modules can import the
helper modules ``ov_helpers`` and ``hz_expect`` in any pytest import mode.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

os.environ.setdefault("VISUS_CPP_VERBOSE", "0")

_SEED = None


def session_seed() -> int:
    """The session seed: ``$HZIO_TEST_SEED`` or a fresh random 32-bit value."""
    global _SEED
    if _SEED is None:
        env = os.environ.get("HZIO_TEST_SEED", "").strip()
        _SEED = int(env, 0) if env else secrets.randbits(32)
    return _SEED


def pytest_report_header(config):
    return f"hzio test seed: {session_seed()} (rerun with HZIO_TEST_SEED={session_seed()})"


def _find_samples():
    env = os.environ.get("HZIO_SHARED")
    if env:
        base = Path(env)
        for cand in (base / "interop" / "openvisus-samples", base):
            if any(cand.glob("*.idx")):
                return cand, True
        return base, True
    return REPO.parent / "shared" / "interop" / "openvisus-samples", False


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """Directory of the 11 OpenVisus-written sample datasets."""
    path, explicit = _find_samples()
    if not any(path.glob("*.idx")):
        msg = f"OpenVisus samples not found at {path}"
        if explicit:
            pytest.fail(msg + " (HZIO_SHARED is set but does not point at the samples)")
        pytest.skip(msg + "; set HZIO_SHARED to the shared directory")
    return path


@pytest.fixture(scope="session")
def openvisus():
    """``import OpenVisus`` or skip (``pip install OpenVisusNoGui numpy``)."""
    try:
        import OpenVisus  # noqa: PLC0415
    except ImportError as exc:
        pytest.skip(f"OpenVisus is not installed (pip install OpenVisusNoGui): {exc}")
    return OpenVisus


@pytest.fixture
def seed() -> int:
    """Session seed, printed so that a failing run can be reproduced."""
    value = session_seed()
    print(f"HZIO_TEST_SEED={value}")
    return value


@pytest.fixture
def rng(seed, request) -> np.random.Generator:
    """Generator seeded by (session seed, test id): reruns draw the same values."""
    return np.random.default_rng([seed, zlib.crc32(request.node.nodeid.encode())])


@pytest.fixture
def sample_copy(samples_dir, tmp_path):
    """``sample_copy(name)`` -> path of a writable copy of ``<name>.idx`` and its folder."""

    def copy(name: str) -> Path:
        dst = tmp_path / "copy"
        dst.mkdir(exist_ok=True)
        shutil.copy(samples_dir / f"{name}.idx", dst / f"{name}.idx")
        shutil.copytree(samples_dir / name, dst / name)
        for p in [dst / f"{name}.idx", *(dst / name).rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        (dst / name).chmod(0o755)
        return dst / f"{name}.idx"

    return copy
