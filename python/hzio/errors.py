"""The hzio exception hierarchy.

Every error raised by hzio derives from :class:`Error`. Subclasses also derive from the matching
built-in exception, so ``except FileNotFoundError`` or ``except ValueError`` work as expected.

Examples
--------
>>> import hzio
>>> try:
...     hzio.open("/nonexistent/data.idx")
... except hzio.NotFoundError as e:
...     print(type(e).__name__)
NotFoundError
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every hzio error."""


class InvalidArgumentError(Error, ValueError):
    """A bad value from the caller: shape, dtype, box, level, option."""


class NotFoundError(Error, FileNotFoundError):
    """A dataset, field, timestep or file does not exist."""


class FormatError(Error):
    """A .idx text or option that hzio does not accept."""


class CorruptError(Error):
    """Bytes on disk contradict the format (bad header, undecodable block)."""


class IoError(Error, OSError):
    """The operating system refused a read, write, rename or sync (e.g. disk full)."""


class UnsupportedError(Error):
    """Valid IDX, but a feature hzio does not implement."""


class WaitTimeoutError(Error, TimeoutError):
    """What was waited for (a timestep to be committed) did not happen in time."""


class InternalError(Error):
    """A bug in hzio."""


_BY_CODE = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: FormatError,
    4: CorruptError,
    5: IoError,
    6: UnsupportedError,
    7: InternalError,
}


def error_class(code: int) -> type[Error]:
    """Local. Return the exception class for a C++ ``hzio::ErrorCode`` value (used by the bindings)."""
    return _BY_CODE.get(code, Error)
