"""Helpers shared by the project's peer scripts (tests/peer/*.py).

These scripts run under the peer venv's interpreter (smdebug 1.0.34, numpy 1.26.4,
protobuf 3.20.3); the Rust test support (`tests/support/lib.rs`) starts them that way.

* ``import_smdebug`` imports the real smdebug without letting it log to stdout (it does by
  default, which would corrupt the JSON the scripts print).
* ``gen_values`` is the deterministic value generator of the recipe format; the Rust side
  (``crates/synth``, ``smdebug_synth::Recipe``) implements the same arithmetic, so every value a fixture
  holds can be recomputed without trusting this file.
* ``encode_array`` / ``array_sha256`` are the canonical JSON encoding of an array used by the
  dump schema ``smdebug-trial-dump/v1``, the fixture manifest and ``read_events.py``.
"""

import hashlib
import math
import os
import struct
import sys

PEER_DIR = os.path.dirname(os.path.abspath(__file__))
PRESETS_DIR = os.path.join(PEER_DIR, "presets")
SMDEBUG_VERSION = "1.0.34"
MASK64 = (1 << 64) - 1


def import_smdebug():
    """Import smdebug quietly (logs go to stderr, level error unless set) and return it."""
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    try:
        import smdebug
        from smdebug.core.logger import get_logger
    except ImportError as e:
        sys.stderr.write(
            f"error: cannot import smdebug ({e}); run this script with the peer venv's "
            "python (cargo xtask peer creates it)\n"
        )
        sys.exit(3)
    for handler in get_logger().handlers:
        if getattr(handler, "stream", None) is sys.stdout:
            handler.setStream(sys.stderr)
    if smdebug.__version__ != SMDEBUG_VERSION:
        sys.stderr.write(f"warning: expected smdebug {SMDEBUG_VERSION}, got {smdebug.__version__}\n")
    return smdebug


# ------------------------------------------------------------------ value generator


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def _splitmix64_array(x):
    """SplitMix64 on a numpy uint64 array (numpy wraps on overflow, as the spec wants)."""
    import numpy as np

    u = np.uint64
    with np.errstate(over="ignore"):
        x = x + u(0x9E3779B97F4A7C15)
        z = (x ^ (x >> u(30))) * u(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u(27))) * u(0x94D049BB133111EB)
        return z ^ (z >> u(31))


def value_seed(recipe_seed, t, g, w):
    s = splitmix64(recipe_seed & MASK64)
    for part in (t, g, w):
        s = splitmix64(s ^ (part & MASK64))
    return s


SPECIALS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


def default_range(dtype):
    if dtype == "int8":
        return (-128, 127)
    if dtype == "uint8":
        return (0, 255)
    if dtype.startswith("uint"):
        return (0, 1000)
    if dtype.startswith("int"):
        return (-1000, 1000)
    return (-1.0, 1.0)


def recipe_number(v):
    return SPECIALS[v] if isinstance(v, str) else v


def gen_values(spec, recipe_seed, t, g, w):
    """The array a fixture writes for tensor ``spec`` (index ``t``) at global step ``g`` for
    worker index ``w`` (``w + 1000`` for the second value of a ``duplicate`` tensor)."""
    import numpy as np

    shape = tuple(int(d) for d in spec.get("shape", []))
    dtype = spec.get("dtype", "float32")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    seed = value_seed(recipe_seed, t, g, w)

    if dtype == "str":
        words = [f"s{g}_{i}_{splitmix64((seed + i) & MASK64) % 1000}" for i in range(n)]
        return np.array(words, dtype=str).reshape(shape)

    np_dtype = np.dtype(dtype)
    pattern = spec.get("pattern", "random")
    if pattern == "step":
        arr = np.full(n, g, dtype=np.float64).astype(np_dtype)
    elif pattern == "const":
        arr = np.full(n, recipe_number(spec["const"]), dtype=np_dtype)
    elif pattern == "random":
        r = _splitmix64_array(np.arange(n, dtype=np.uint64) + np.uint64(seed))
        lo, hi = spec.get("range", default_range(dtype))
        if np_dtype.kind == "b":
            arr = (r >> np.uint64(63)).astype(bool)
        elif np_dtype.kind in "iu":
            span = np.uint64(int(hi) - int(lo) + 1)
            arr = (np.int64(lo) + (r % span).astype(np.int64)).astype(np_dtype)
        elif np_dtype.kind in "fc":
            u = (r >> np.uint64(11)).astype(np.float64) * (2.0**-53)
            arr = (float(lo) + (float(hi) - float(lo)) * u).astype(np_dtype)
        else:
            raise ValueError(f"unsupported dtype {dtype}")
    else:
        raise ValueError(f"unknown pattern {pattern!r}")

    for inj in spec.get("inject", []):
        i = int(inj["index"])
        if i < n:
            arr[i] = recipe_number(inj["value"])
    return arr.reshape(shape)


# ------------------------------------------------------------- canonical encoding


def dtype_name(arr):
    return "str" if arr.dtype.kind in "USO" else arr.dtype.name


def json_float(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def json_scalar(v):
    if isinstance(v, float):
        return json_float(v)
    if isinstance(v, complex):
        return [json_float(v.real), json_float(v.imag)]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v  # bool, int, str


def array_sha256(arr):
    """sha256 of the element bytes: C order, little-endian, bool as 1 byte, complex as
    (re, im) pairs; strings as u32le(len(utf8)) + utf8 per element."""
    import numpy as np

    h = hashlib.sha256()
    if dtype_name(arr) == "str":
        for s in arr.reshape(-1).tolist():
            b = str(s).encode("utf-8")
            h.update(struct.pack("<I", len(b)) + b)
    else:
        a = np.ascontiguousarray(arr)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        h.update(a.tobytes(order="C"))
    return h.hexdigest()


def inline_data(arr):
    return [json_scalar(v) for v in arr.reshape(-1).tolist()]


def encode_array(value, max_inline):
    """A value returned by smdebug as the dump schema's VALUE object."""
    import numpy as np

    if value is None:
        return {"none": True}
    arr = np.asarray(value)
    out = {
        "dtype": dtype_name(arr),
        "shape": [int(d) for d in arr.shape],
        "size": int(arr.size),
        "sha256": array_sha256(arr),
    }
    if arr.size <= max_inline:
        out["data"] = inline_data(arr)
    elif arr.dtype.kind == "f":
        a = arr.astype(np.float64)
        finite = a[np.isfinite(a)]
        have = finite.size > 0
        out["stats"] = {
            "nan": int(np.isnan(a).sum()),
            "posinf": int(np.isposinf(a).sum()),
            "neginf": int(np.isneginf(a).sum()),
            "finite_min": json_float(float(finite.min())) if have else None,
            "finite_max": json_float(float(finite.max())) if have else None,
            "finite_mean": json_float(float(finite.mean())) if have else None,
        }
    elif arr.dtype.kind in "iu":
        out["stats"] = {
            "min": int(arr.min()),
            "max": int(arr.max()),
            "mean": json_float(float(arr.astype(np.float64).mean())),
        }
    elif arr.dtype.kind == "b":
        trues = int(arr.sum())
        out["stats"] = {"true": trues, "false": int(arr.size) - trues}
    return out


def error_obj(exc):
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}
