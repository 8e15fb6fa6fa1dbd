"""What hzio accepts in a .idx, it writes back so that it reads the same; what it cannot, it refuses to
open for writing. ``create`` refuses default values the dtype or the text cannot carry.

Property test over the .idx corpus of the fuzz target (``fuzz/corpus/idx_text``) and seeded mutations of
it aimed at the parser's corners (brackets and parentheses in names and ``min()``/``max()`` texts, keys
in odd places, extra fields and timesteps). For every mutant that opens read-only, a writable open either
refuses with ``hzio.UnsupportedError`` or accepts; when it accepts, a commit that adds a timestep rewrites
the .idx, and the dataset must then read as before (the metadata read before the write is the oracle),
plus the new timestep.
"""

from __future__ import annotations

from pathlib import Path

import hzio
import numpy as np
import pytest

CORPUS = Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "idx_text"
MUTANTS_PER_FILE = 60
INSERTS = ["(", ")", "[", "]", "{", "}", "+", "#", " ", "min(", "max(", "x)", "(y", "\n", "+ e int8 min(()",
           "description(a(b)c)", "default_value(1.5)"]


def metadata(ds):
    return {"shape": ds.grid_shape, "origin": ds.origin, "fields": ds.fields, "codecs": ds.codecs,
            "layouts": ds.layouts, "bitmask": ds.bitmask, "bits_per_block": ds.bits_per_block,
            "blocks_per_file": ds.blocks_per_file, "times": ds.times,
            "defaults": [f.default_value for f in ds._core.fields]}


def mutate(text, rng):
    """One to three edits at random places: inserted parser-significant text, a deleted span, a
    duplicated line, or an added key."""
    for _ in range(int(rng.integers(1, 4))):
        kind = int(rng.integers(0, 5))
        at = int(rng.integers(0, len(text) + 1))
        if kind <= 1:
            text = text[:at] + INSERTS[int(rng.integers(0, len(INSERTS)))] + text[at:]
        elif kind == 2:
            text = text[:at] + text[at + int(rng.integers(1, 8)):]
        elif kind == 3:
            lines = text.split("\n")
            i = int(rng.integers(0, len(lines)))
            text = "\n".join(lines[:i] + [lines[i]] + lines[i:])
        else:
            text += rng.choice(["\n(time)\n0 2 t_%d/\n", "\n(fields)\na(1) float32 + b) int16\n",
                                "\n(note (x)\nkept\n", "\n(physic_box)\n0 1 0 1 0 1\n"])
    return text


# (fields) values whose brackets and parentheses the parser balances differently inside and outside
# options: some read back the same, some would lose a field when written back, all must be handled.
# Each with whether a writable open must accept it (True) or refuse it (False).
TRICKY_FIELDS = {"a float32 min([) ] + b int16": False, "a float32 max({) } + b int16": False,
                 "a[ float32 ] + b int16": False, "a float32 description(x]) [ + b int16": True,
                 "a) float32 + b( int16 ) + c uint8": True, "a float32 min(() ) + b int16": True,
                 "a float32 default_value(1) min(1]) [ max(2) + b int16": True, "a float32 + #b int16": True,
                 "a float32\n+ #b int16": True, "a float32 + b{ int16 }": False,
                 "a float32 min(]) [ + b int16 max([) ]": True, "a float32 description(( + b int16 ))": True,
                 "a float32 min(-1) max(2.5) description(x (y)) + b int16": True,
                 "a uint8 default_value(300) + b int16": False}
BASE = "(version)\n6\n(box)\n0 15 0 15\n(fields)\n{fields}\n(bits)\nV01010101\n(time)\n0 1 t_%d/\n"


def cases():
    out = [("tricky", i, BASE.format(fields=f)) for i, f in enumerate(TRICKY_FIELDS)]
    for path in sorted(CORPUS.glob("*.idx")):
        text = path.read_text(errors="replace")
        rng = np.random.default_rng(len(out) + 7)  # fixed: the same mutants on every run
        out.append((path.name, 0, text))
        out.extend((path.name, i, mutate(text, rng)) for i in range(1, MUTANTS_PER_FILE + 1))
    return out


CASES = cases()


def small_enough(ds):
    return ds.bits_per_block <= 16 and max(ds.grid_shape) <= 4096 and len(ds.times) < 1000


@pytest.mark.parametrize("name,index,text", CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_what_opens_for_writing_reads_back_the_same_after_a_commit(tmp_path, name, index, text):
    path = tmp_path / "m.idx"
    path.write_text(text)
    try:
        with hzio.open(path) as ds:
            before = metadata(ds)
    except hzio.Error:
        return  # refused at open: nothing is written back
    try:
        ds = hzio.open(path, mode="r+", durable=False)
    except hzio.UnsupportedError as e:
        assert "open it read-only" in str(e), str(e)
        return
    with ds:
        if not small_enough(ds) or not ds.times:
            return
        new_time = max(ds.times) + 1
        field = next(iter(ds.fields))
        try:
            ds.write(np.zeros((1,) * ds.grid_ndim + ((3,) if "[3]" in ds.fields[field] else ()),
                              dtype=ds._fields[field][1]), offset=ds.origin, field=field, time=new_time)
        except hzio.InvalidArgumentError:
            return  # a dataset with one timestep 0 and no time template: the .idx is never rewritten
    with hzio.open(path) as back:
        after = metadata(back)
    assert after["times"] == sorted(set(before["times"]) | {new_time})
    after["times"] = before["times"]
    assert after == before, text


@pytest.mark.parametrize("fields,accepted", sorted(TRICKY_FIELDS.items()))
def test_bracket_corners_are_accepted_or_refused_for_writing_as_expected(tmp_path, fields, accepted):
    path = tmp_path / "t.idx"
    path.write_text(BASE.format(fields=fields))
    with hzio.open(path):
        pass  # every one opens read-only
    if accepted:
        hzio.open(path, mode="r+").close()
    else:
        with pytest.raises(hzio.UnsupportedError, match="open it read-only"):
            hzio.open(path, mode="r+")


def test_the_property_covers_many_writable_mutants(tmp_path):
    accepted = 0
    for _, _, text in CASES:
        (tmp_path / "m.idx").write_text(text)
        try:
            hzio.open(tmp_path / "m.idx", mode="r+", durable=False).close()
            accepted += 1
        except hzio.Error:
            pass
    assert accepted >= len(CASES) // 3, (accepted, len(CASES))


@pytest.mark.parametrize("dtype,value", [("uint8", 300), ("uint8", -1), ("int8", 1.5), ("float32", 1e40),
                                         ("float64", float("nan")), ("float32", float("inf")),
                                         ("int32", 2 ** 31), ("uint64", -0.5)])
def test_create_refuses_default_values_the_dtype_cannot_hold(tmp_path, dtype, value):
    with pytest.raises(hzio.InvalidArgumentError, match="default value"):
        hzio.create(tmp_path / "d.idx", shape=(4, 4), fields=[("v", dtype, {"default_value": value})])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype,value", [("uint8", 255), ("int8", -128), ("float32", 3.4e38), ("float64", -1e300),
                                         ("int64", -2 ** 63), ("float32", 0.1)])
def test_create_keeps_default_values_the_dtype_holds(tmp_path, dtype, value):
    path = tmp_path / "d.idx"
    with hzio.create(path, shape=(4, 4), fields=[("v", dtype, {"default_value": value})]):
        pass
    with hzio.open(path) as ds:
        expected = np.full((4, 4), value, dtype=dtype)
        np.testing.assert_array_equal(ds.read(), expected)


@pytest.mark.parametrize("name", ["a(b", "a)b", "a[b", "x]", "{y", "#z"])
def test_create_refuses_field_names_the_text_cannot_carry(tmp_path, name):
    with pytest.raises(hzio.InvalidArgumentError):
        hzio.create(tmp_path / "n.idx", shape=(4, 4), fields={"ok": "float32", name: "float32"})
    assert list(tmp_path.iterdir()) == []
