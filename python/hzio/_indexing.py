"""NumPy-exact basic indexing on datasets: turn a key into a box to read plus the selection inside it."""

import operator

import numpy as np

from .errors import InvalidArgumentError


def normalize_key(key, shape):
    """Expand ``key`` into one ``int`` or ``slice`` per axis of ``shape``.

    Raises IndexError exactly where NumPy basic indexing would, and for the forms
    hzio does not support (``None``, boolean or integer arrays).
    """
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    for k in key:
        if k is None:
            raise IndexError("hzio datasets do not support np.newaxis in an index; index the result instead")
        if not (k is Ellipsis or isinstance(k, slice)):
            try:
                operator.index(k)
            except TypeError:
                raise IndexError(
                    f"hzio datasets support integers, slices and '...', not {type(k).__name__}"
                ) from None
    n_real = sum(k is not Ellipsis for k in key)
    if n_real > len(shape):
        raise IndexError(f"too many indices for dataset: dataset is {len(shape)}-dimensional, but {n_real} were "
                         "indexed")
    out = []
    for k in key:
        if k is Ellipsis:
            out.extend([slice(None)] * (len(shape) - n_real))
        else:
            out.append(k)
    out.extend([slice(None)] * (len(shape) - len(out)))
    return out


def plan(key, shape):
    """Return ``(lo, hi, picks)``: the bounding box to read ([z, y, x]) and per-axis selections into it.

    ``picks[a]`` is an int (the axis is dropped), a ``range(0, hi - lo)`` (the whole axis of the box, as a
    step-1 slice gives) or an index array (possibly empty or descending). ``lo``/``hi`` are None when the
    selection is empty.
    """
    lo, hi, picks = [], [], []
    empty = False
    for k, n in zip(normalize_key(key, shape), shape):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step == 1 and stop > start:  # the common case, without NumPy's per-call costs
                lo.append(start)
                hi.append(stop)
                picks.append(range(stop - start))
                continue
            idx = np.arange(start, stop, step, dtype=np.int64)
            if idx.size == 0:
                empty = True
                lo.append(0)
                hi.append(1)
                picks.append(idx)
            else:
                a, b = int(idx.min()), int(idx.max()) + 1
                lo.append(a)
                hi.append(b)
                picks.append(idx - a)
        else:
            i = operator.index(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {len(lo)} with size {n}")
            i = i + n if i < 0 else i
            lo.append(i)
            hi.append(i + 1)
            picks.append(0)
    return (None, None, picks) if empty else (tuple(lo), tuple(hi), picks)


def plan_array(key, grid_shape, comps):
    """:func:`plan` over a field's array shape: the grid, plus the component axis when ``comps > 1``.

    Returns ``(lo, hi, picks)`` with ``lo``/``hi`` over the grid axes only and one pick per array axis
    (the component pick counts from component 0, since every read holds all components).
    """
    if comps == 1:
        return plan(key, grid_shape)
    lo, hi, picks = plan(key, tuple(grid_shape) + (comps,))
    if lo is None:
        return None, None, picks
    last = picks[-1]
    picks[-1] = np.arange(last.start, last.stop, dtype=np.int64) + lo[-1] if isinstance(last, range) else last + lo[-1]
    return lo[:-1], hi[:-1], picks


def empty_selection(picks, dtype):
    """The empty array an empty selection (``lo is None`` from :func:`plan`) returns."""
    return np.empty(tuple(len(p) for p in picks if not isinstance(p, (int, np.integer))), dtype=dtype)


def select(block, picks):
    """Apply per-axis picks (from :func:`plan`) to an array read for the bounding box."""
    out = block
    axis = 0
    for p in picks:
        if isinstance(p, (int, np.integer)):
            out = np.take(out, int(p), axis=axis)
        elif isinstance(p, range):  # the whole axis
            axis += 1
        else:
            if not (p.size == out.shape[axis] and (p.size == 0 or (p[0] == 0 and np.all(np.diff(p) == 1)))):
                out = np.take(out, p, axis=axis)
            axis += 1
    return out


def box_of_slices(key, shape, what):
    """The [z, y, x] box of a key made of step-1 slices and ints (for writes and level views)."""
    lo, hi, dropped = [], [], []
    for a, (k, n) in enumerate(zip(normalize_key(key, shape), shape)):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step != 1:
                raise InvalidArgumentError(f"{what} needs slices with step 1 (axis {a} has step {step})")
            lo.append(start)
            hi.append(max(start, stop))
        else:
            i = operator.index(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {a} with size {n}")
            i = i + n if i < 0 else i
            lo.append(i)
            hi.append(i + 1)
            dropped.append(a)
    return tuple(lo), tuple(hi), dropped
