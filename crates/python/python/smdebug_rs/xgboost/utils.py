"""``smdebug.xgboost.utils``: ``parse_tree_model``, the table of one tree of a booster."""

import re

import numpy as np

__all__ = ["parse_tree_model"]


def parse_tree_model(booster, iteration, fmap=""):
    """The table of tree ``iteration`` of ``booster`` (smdebug's ``parse_tree_model``:
    ``Booster.trees_to_dataframe`` as a dict of numpy arrays, sorted by node id)."""
    cols = {k: [] for k in ("Tree", "Node", "Feature", "Split", "Yes", "No", "Missing",
                            "Gain", "Cover", "Category")}
    trees = booster.get_dump(fmap=fmap, with_stats=True)
    if iteration < len(trees):
        i = iteration
        for line in trees[i].split("\n"):
            arr = line.split("[")
            if len(arr) == 1:
                if arr == [""]:
                    continue
                parse = arr[0].split(":")
                stats = re.split("=|,", parse[1])
                cols["Tree"].append(i)
                cols["Node"].append(int(re.findall(r"\b\d+\b", parse[0])[0]))
                cols["Feature"].append("Leaf")
                for k in ("Split", "Yes", "No", "Missing", "Category"):
                    cols[k].append(float("NAN"))
                cols["Gain"].append(float(stats[1]))
                cols["Cover"].append(float(stats[3]))
            else:
                fid = arr[1].split("]")
                if fid[0].find("<") != -1:
                    parse = fid[0].split("<")
                    cols["Split"].append(float(parse[1]))
                    cols["Category"].append(float("NAN"))
                elif fid[0].find(":{") != -1:
                    parse = fid[0].split(":")
                    cats = parse[1][1:-1].split(",")
                    cols["Split"].append(float("NAN"))
                    cols["Category"].append(cats if cats else float("NAN"))
                else:
                    raise ValueError("Failed to parse tree model text dump.")
                stats = re.split("=|,", fid[1])
                cols["Tree"].append(i)
                cols["Node"].append(int(re.findall(r"\b\d+\b", arr[0])[0]))
                cols["Feature"].append(parse[0])
                cols["Yes"].append(f"{i}-{stats[1]}")
                cols["No"].append(f"{i}-{stats[3]}")
                cols["Missing"].append(f"{i}-{stats[5]}")
                cols["Gain"].append(float(stats[7]))
                cols["Cover"].append(float(stats[9]))
    ids = [f"{t}-{n}" for t, n in zip(cols["Tree"], cols["Node"])]
    out = {
        "Tree": np.array(cols["Tree"], dtype=np.dtype("int")),
        "Node": np.array(cols["Node"], dtype=np.dtype("int")),
        "ID": np.array(ids, dtype=np.dtype("U")),
        "Feature": np.array(cols["Feature"], dtype=np.dtype("U")),
        "Split": np.array(cols["Split"], dtype=np.dtype("float")),
        "Yes": np.array(cols["Yes"], dtype=np.dtype("U")),
        "No": np.array(cols["No"], dtype=np.dtype("U")),
        "Missing": np.array(cols["Missing"], dtype=np.dtype("U")),
        "Gain": np.array(cols["Gain"], dtype=np.dtype("float")),
        "Cover": np.array(cols["Cover"], dtype=np.dtype("float")),
        "Category": np.array(cols["Category"], dtype=np.dtype("U")),
    }
    order = out["Node"].argsort()
    return {k: a[order] for k, a in out.items()}
