#!/usr/bin/env python3
"""Read a `smdebug export` output with pyarrow, pandas, polars and DuckDB, check that all
four see the same rows, and compare them with a reference (export_reference.py).

  export_read.py OUT [--format parquet|arrow|csv] [--reference REF.json]
  export_read.py OUT --gradient-l2          # DuckDB: per-layer gradient l2 by step

Runs under the tools venv (SMDEBUG_TOOLS_PYTHON). Prints one JSON object:

  {"rows": {TABLE: N}, "readers": [NAME...], "disagreements": [TEXT...],
   "differences": [TEXT...], "known": {KIND: N}}

`disagreements`: where one reader's rows differ from pyarrow's. `differences`: where the
rows differ from the reference (floats compared with a relative tolerance of 1e-9, since
numpy sums pairwise and the export blockwise). `known`: rows the reference could not hold
because the original reader cannot return the value (its [PY-BUG]s: int8 read as uint8,
values it fails to decode or hides); those rows are compared on their keys only.
With --gradient-l2 it prints [[tensor, step, l2], ...] where l2 = sqrt(sum over workers of
l2^2), from a DuckDB query over the (Hive-partitioned) tensors table.
"""

import argparse
import glob
import json
import math
import os
import sys

sys.dont_write_bytecode = True

TABLES = ["tensors", "reductions", "scalars", "steps"]
KEYS = {
    "tensors": ["tensor", "step", "worker"],
    "reductions": ["tensor", "step", "worker", "reduction", "abs"],
    "scalars": ["name", "step", "worker"],
    "steps": ["step", "worker"],
}
INT_COLUMNS = {"mode_step", "step", "element_count", "nan_count", "pos_inf_count",
               "neg_inf_count", "zero_count"}
LIST_COLUMNS = {"collections", "shape", "values"}
DROP = {"trial", "step_bucket"}


def files(out, table, ext):
    single = os.path.join(out, f"{table}.{ext}")
    if os.path.exists(single):
        return [single], False
    return sorted(glob.glob(os.path.join(out, table, "step_bucket=*", f"*.{ext}"))), True


def norm_scalar(col, v):
    import numpy as np

    if v is None:
        return None
    try:
        import pandas as pd
        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:
        pass
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        v = int(v)
    if isinstance(v, (np.floating, float)):
        v = float(v)
        if col in INT_COLUMNS and v.is_integer():
            return int(v)
        return norm_item(v)
    return v


def norm_item(v):
    import numpy as np

    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        v = float(v)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, bytes):
        return v.decode()
    return v


def norm_list(v, text):
    import numpy as np

    if v is None:
        return None
    if text:  # CSV: a JSON array as text, an empty field for null
        if (isinstance(v, float) and math.isnan(v)) or v == "":
            return None
        return [norm_item(x) for x in json.loads(v)]
    if isinstance(v, float) and math.isnan(v):
        return None
    return [norm_item(x) for x in list(np.asarray(v).tolist() if hasattr(v, "tolist") else v)]


def norm_rows(records, text_lists=False):
    out = []
    for r in records:
        row = {}
        for k, v in r.items():
            if k in DROP:
                continue
            row[k] = norm_list(v, text_lists) if k in LIST_COLUMNS else norm_scalar(k, v)
        out.append(row)
    return out


def sort_rows(table, rows):
    return sorted(rows, key=lambda r: tuple(str(r.get(k)) if k != "step" else r.get(k)
                                            for k in KEYS[table]))


def read_pyarrow(out, table, fmt):
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds
    import pyarrow.ipc as ipc

    ext = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}[fmt]
    paths, _ = files(out, table, ext)
    tables = []
    for p in paths:
        if fmt == "parquet":
            tables.append(ds.dataset(p, format="parquet").to_table())
        elif fmt == "arrow":
            with pa.memory_map(p) as src:
                tables.append(ipc.open_file(src).read_all())
        else:
            # Only an empty field is null: "NaN" is a float (pyarrow's default list of null
            # spellings holds it).
            conv = pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True)
            tables.append(pcsv.read_csv(p, convert_options=conv))
    rows = []
    for t in tables:
        rows.extend(t.to_pylist())
    return norm_rows(rows, text_lists=(fmt == "csv"))


def read_pandas(out, table, fmt):
    import pandas as pd

    ext = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}[fmt]
    paths, partitioned = files(out, table, ext)
    if fmt == "parquet":
        target = os.path.join(out, table) if partitioned else paths[0]
        df = pd.read_parquet(target, dtype_backend="pyarrow")
    elif fmt == "arrow":
        df = pd.concat([pd.read_feather(p, dtype_backend="pyarrow") for p in paths])
    else:
        # As text, typed by column name below: pandas' inference turns a float column
        # holding "NaN" into strings, and nulls into NaN.
        df = pd.concat([pd.read_csv(p, dtype=str, keep_default_na=False) for p in paths])
        return norm_rows(coerce_text(df.to_dict("records")), text_lists=True)
    return norm_rows(df.to_dict("records"), text_lists=(fmt == "csv"))


def read_polars(out, table, fmt):
    import polars as pl

    ext = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}[fmt]
    paths, partitioned = files(out, table, ext)
    if fmt == "parquet":
        if partitioned:
            df = pl.read_parquet(os.path.join(out, table, "**", "*.parquet"), hive_partitioning=True)
        else:
            df = pl.read_parquet(paths[0])
    elif fmt == "arrow":
        df = pl.concat([pl.read_ipc(p) for p in paths])
    else:
        df = pl.concat([pl.read_csv(p, infer_schema_length=0) for p in paths])
        return norm_rows(coerce_text(df.to_dicts()), text_lists=True)
    return norm_rows(df.to_dicts(), text_lists=(fmt == "csv"))


def coerce_text(rows):
    """polars read CSV as text (no inference): the columns' types from their names."""
    floats = {"min", "max", "mean", "std", "l1", "l2", "value", "wall_time"}
    out = []
    for r in rows:
        row = {}
        for k, v in r.items():
            if v is None or v == "":
                row[k] = None
            elif k in INT_COLUMNS:
                row[k] = int(v)
            elif k in floats:
                row[k] = norm_item(float(v))
            elif k in ("abs", "complete"):
                row[k] = v == "true"
            else:
                row[k] = v
        out.append(row)
    return out


def read_duckdb(out, table, fmt):
    import duckdb

    ext = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}[fmt]
    paths, partitioned = files(out, table, ext)
    con = duckdb.connect()
    if fmt == "parquet":
        src = (f"read_parquet('{os.path.join(out, table)}/**/*.parquet', hive_partitioning=true)"
               if partitioned else f"read_parquet('{paths[0]}')")
    elif fmt == "csv":
        src = "read_csv([{}], header=true, all_varchar=true)".format(
            ", ".join(f"'{p}'" for p in paths))
        cur = con.sql(f"SELECT * FROM {src}")
        cols = cur.columns
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        return norm_rows(coerce_text(rows), text_lists=True)
    else:
        return None  # DuckDB has no built-in Arrow IPC file reader
    cur = con.sql(f"SELECT * FROM {src}")
    cols = cur.columns
    return norm_rows([dict(zip(cols, r)) for r in cur.fetchall()])


READERS = [("pyarrow", read_pyarrow), ("pandas", read_pandas), ("polars", read_polars),
           ("duckdb", read_duckdb)]


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-300
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def compare(table, ours, ref, known, diffs):
    key = lambda r: tuple(r.get(k) for k in KEYS[table])  # noqa: E731
    mine = {key(r): r for r in ours}
    theirs = {key(r): r for r in ref}
    for k in sorted(set(mine) | set(theirs), key=str):
        if k not in mine:
            diffs.append(f"{table} {k}: missing from the export")
            continue
        if k not in theirs:
            diffs.append(f"{table} {k}: not in the reference")
            continue
        a, b = mine[k], theirs[k]
        if "python_error" in b:
            known["python_" + b["python_error"]] = known.get("python_" + b["python_error"], 0) + 1
            continue
        if table == "tensors" and b.get("dtype") == "uint8" and a.get("dtype") == "int8":
            known["int8_read_as_uint8"] = known.get("int8_read_as_uint8", 0) + 1
            continue
        if table == "tensors" and b.get("dtype") is None and a.get("dtype") is not None:
            known["value_python_cannot_return"] = known.get("value_python_cannot_return", 0) + 1
            continue
        for col, want in b.items():
            got = a.get(col)
            if not close(got, want):
                diffs.append(f"{table} {k}: {col} = {got!r}, reference {want!r}")


def gradient_l2(out):
    import duckdb

    paths, partitioned = files(out, "tensors", "parquet")
    src = (f"read_parquet('{os.path.join(out, 'tensors')}/**/*.parquet', hive_partitioning=true)"
           if partitioned else f"read_parquet('{paths[0]}')")
    rows = duckdb.sql(f"""
        SELECT tensor, step, sqrt(sum(l2 * l2)) AS l2
        FROM {src}
        WHERE tensor LIKE 'gradient%'
        GROUP BY tensor, step
        ORDER BY tensor, step""").fetchall()
    return [[t, int(s), float(v)] for t, s, v in rows]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--format", default="parquet", choices=["parquet", "arrow", "csv"])
    ap.add_argument("--reference")
    ap.add_argument("--gradient-l2", action="store_true")
    args = ap.parse_args(argv)
    if args.gradient_l2:
        json.dump(gradient_l2(args.out), sys.stdout)
        sys.stdout.write("\n")
        return
    report = {"rows": {}, "readers": [], "disagreements": [], "differences": [], "known": {}}
    ref = json.load(open(args.reference)) if args.reference else None
    for table in TABLES:
        base = None
        for name, reader in READERS:
            rows = reader(args.out, table, args.format)
            if rows is None:
                continue
            if name not in report["readers"]:
                report["readers"].append(name)
            rows = sort_rows(table, rows)
            if base is None:
                base = rows
                report["rows"][table] = len(rows)
            elif rows != base:
                first = next((f"{x} != {y}" for x, y in zip(rows, base) if x != y),
                             f"{len(rows)} rows, pyarrow {len(base)}")
                report["disagreements"].append(f"{name} {table}: {first}")
        if ref is not None:
            compare(table, base, ref[table], report["known"], report["differences"])
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
