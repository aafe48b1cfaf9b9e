"""numpy's (and smdebug's) reductions of test arrays, for tests/conformance/reduce.rs.

Usage: reduce_numpy.py [INPUT.json]   (stdin when no path is given)

Input: a JSON list of arrays {"dtype": "float32", "shape": [2, 3], "values": [...]} with
values in row-major order; non-finite floats are the strings "nan", "inf", "-inf".

Output: a JSON list with, per array, an object mapping each of the 20 reduction names
("min", ..., "abs_l2") to {"dtype": numpy result dtype, "value": v} or {"error": exception
class name, "message": str}. The 18 smdebug reductions go through smdebug's own
`get_numpy_reduction`; "median"/"abs_median" (which smdebug's config rejects) through
`np.median` of the array (of `np.absolute` of it for abs). Float results are printed as the
float64 value of the result (exact for float16/float32), non-finite ones as strings.
"""
import json
import math
import struct
import sys
import warnings

import numpy as np
from smdebug.core.reductions import get_numpy_reduction

OPS = ["min", "max", "median", "mean", "std", "variance", "sum", "prod", "l1", "l2"]
SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def decode(spec):
    values = [SPECIAL.get(v, v) if isinstance(v, str) else v for v in spec["values"]]
    dtype = np.dtype(spec["dtype"])
    shape = tuple(spec["shape"])
    if shape == ():
        return np.array(values[0], dtype=dtype)
    return np.array(values, dtype=dtype).reshape(shape)


def encode(r):
    arr = np.asarray(r)
    kind = arr.dtype.kind
    v = arr.item()
    if kind == "f":
        v = float(v)
        # serde_json does not parse every decimal float exactly: send the bits too.
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        if math.isnan(v):
            v = "nan"
        elif math.isinf(v):
            v = "inf" if v > 0 else "-inf"
    elif kind in "iu":
        v = int(v)
    elif kind == "b":
        v = bool(v)
    else:
        raise TypeError("unexpected result dtype %s" % arr.dtype)
    if kind == "f":
        return {"dtype": str(arr.dtype), "value": v, "f64_bits": bits}
    return {"dtype": str(arr.dtype), "value": v}


def reduce_all(x):
    out = {}
    for absolute in (False, True):
        for op in OPS:
            key = ("abs_" if absolute else "") + op
            try:
                if op == "median":
                    r = np.median(np.absolute(x) if absolute else x)
                else:
                    r = get_numpy_reduction(op, x, absolute)
                out[key] = encode(r)
            except Exception as e:  # the class name is what the test compares
                out[key] = {"error": type(e).__name__, "message": str(e)}
    return out


def main():
    warnings.simplefilter("ignore")
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    with src:
        arrays = json.load(src)
    json.dump([reduce_all(decode(a)) for a in arrays], sys.stdout)


if __name__ == "__main__":
    main()
