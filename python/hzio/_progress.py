"""Progress bars of the ``hzio`` command line: a tqdm bar on stderr, or nothing.

Every long-running verb (``convert``, ``export``, ``read``, ``verify``, ``index``, ``dump``) takes
``--progress``/``--no-progress``; by default a bar is drawn only when stderr is a terminal. Bars go to
stderr, so ``--json`` output on stdout stays one JSON document. tqdm is imported only when a bar is drawn.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from ._cli_util import UsageError


class _NoBar:
    """What :func:`progress_bar` returns when no bar is drawn: every call does nothing."""

    total: float | None = None

    def update(self, n: float = 1) -> None:
        """Local. Do nothing."""

    def set_postfix_str(self, text: str) -> None:
        """Local. Do nothing."""

    def close(self) -> None:
        """Local. Do nothing."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def wanted(option: bool | None, rank: int = 0) -> bool:
    """Local. Whether to draw a bar: ``--progress`` (True), ``--no-progress`` (False), else stderr is a terminal.

    Only rank 0 of an MPI run draws. ``--progress`` without tqdm installed is a usage error; without
    the option a missing tqdm just means no bar.

    Examples
    --------
    >>> wanted(False), wanted(True, rank=1)
    (False, False)
    """
    if rank != 0 or option is False:
        return False
    present = importlib.util.find_spec("tqdm") is not None
    if option and not present:
        raise UsageError("--progress needs the tqdm package (pip install tqdm, or pip install 'hzio[convert]')")
    return present and (option is True or sys.stderr.isatty())


def progress_bar(show: bool, total: float | None, desc: str, unit: str = "B") -> Any:
    """Local. Return a tqdm bar on stderr (a context manager with ``update(n)``), or a bar that draws nothing.

    Parameters
    ----------
    show : bool
        Draw it (see :func:`wanted`).
    total : float or None
        The amount of work; None for a bar that only counts.
    desc : str
        The label on the left.
    unit : str
        ``"B"`` counts bytes (shown as KiB, MiB, ...); anything else is a plain count of that unit.

    Examples
    --------
    >>> with progress_bar(False, 10, "blocks", unit="block") as bar:
    ...     bar.update(10)
    """
    if not show:
        return _NoBar()
    from tqdm import tqdm  # type: ignore[import-untyped]  # no stubs needed
    scaled = unit == "B"
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=scaled, unit_divisor=1024 if scaled else 1000,
                file=sys.stderr, dynamic_ncols=True, mininterval=0.2, leave=True)


def grow(bar: Any, amount: float) -> None:
    """Local. Add ``amount`` to the total of ``bar``, for work found while it runs (blocks listed per table)."""
    if isinstance(bar, _NoBar):
        return
    bar.total = (bar.total or 0) + amount
    bar.refresh()
