#!/usr/bin/env python3
"""Write real XGBoost trials: `xgboost.train` with smdebug 1.0.34's own
`smdebug.xgboost.Hook`, on small data made by numpy with fixed seeds (deterministic: one
thread, fixed `seed`).

  xgboost_trials.py OUT_DIR [--only NAME]...

Writes OUT_DIR/<name>/ for each trial and prints one JSON object to stdout:
{name: facts}, the facts of how each trial was made and how its model came out (objective,
sizes, class counts of the validation labels, the features the label depends on, the
tree parameters, the last round's metrics, the validation accuracy), which the
conformance tests check before they judge the rules' verdicts.

Every trial saves the collections metrics, predictions, labels, feature_importance,
average_shap, full_shap and trees at every round (save_interval 1), with
`train_data` = the training DMatrix (SHAP values) and `validation_data` = the validation
DMatrix (predictions, labels); `evals` are `train` and `validation`.

Needs xgboost (tests/peer/requirements.txt installs `xgboost-cpu`;
tests/peer/xgboost_dist_shim.py makes smdebug find it).
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402

N_FEATURES = 8
ROUNDS = 12
SHAP_ROWS = 100
COLLECTIONS = ["metrics", "predictions", "labels", "feature_importance", "average_shap",
               "full_shap", "trees"]


def gaussian(rng, n):
    return rng.standard_normal((n, N_FEATURES))


def binary_two_features(rng, n):
    """The label depends on f0 and f1 only (a little noise on the boundary)."""
    x = gaussian(rng, n)
    y = (x[:, 0] + x[:, 1] + 0.1 * rng.standard_normal(n) > 0).astype("float32")
    return x, y


def clusters(rng, n, classes=3):
    """Each class a cluster whose centre differs from the others in every feature: every
    feature carries the label, the classes are well apart."""
    import numpy as np

    centres = np.array([[1, -1, 1, -1, 1, -1, 1, -1],
                        [-1, 1, 1, -1, -1, 1, 1, -1],
                        [1, 1, -1, -1, 1, 1, -1, -1]])[:classes]
    y = rng.integers(0, classes, n)
    x = centres[y] + rng.standard_normal((n, N_FEATURES))
    return x, y.astype("float32")


def imbalanced(rng, n):
    """About 3 % positives: the label is f0 > 1.9 (one clean split)."""
    x = gaussian(rng, n)
    return x, (x[:, 0] > 1.9).astype("float32")


def dominant(rng, n):
    """The label depends on f3 alone."""
    x = gaussian(rng, n)
    y = (x[:, 3] + 0.1 * rng.standard_normal(n) > 0).astype("float32")
    return x, y


def linear_all(rng, n):
    """A regression target that every feature contributes to about equally."""
    import numpy as np

    x = gaussian(rng, n)
    w = np.array([1.0, -0.9, 0.8, -1.1, 0.95, -0.85, 1.05, -1.0])
    return x, (x @ w + 0.5 * rng.standard_normal(n)).astype("float32")


def wiggly(rng, n):
    """A regression target with interactions and high frequencies: deep trees chase it."""
    import numpy as np

    x = gaussian(rng, n)
    y = np.sin(3 * x[:, 0]) * np.cos(3 * x[:, 1]) + x[:, 2] * x[:, 3] \
        + 0.3 * rng.standard_normal(n)
    return x, y.astype("float32")


SHALLOW = {"max_depth": 3, "eta": 0.3}

# name: (seed, data, n_train, n_val, params, label depends on, what the trial stands for)
TRIALS = {
    "binary_healthy": (1, binary_two_features, 10000, 2000,
                       {"objective": "binary:logistic", **SHALLOW}, ["f0", "f1"],
                       "a good binary classifier; the label depends on 2 of 8 features"),
    "multiclass_softprob": (2, clusters, 40000, 3000,
                            {"objective": "multi:softprob", "num_class": 3, **SHALLOW},
                            [f"f{i}" for i in range(N_FEATURES)],
                            "3 well-separated classes, every feature informative; "
                            "predictions are probabilities (n x 3)"),
    "multiclass_softmax": (2, clusters, 40000, 3000,
                           {"objective": "multi:softmax", "num_class": 3, **SHALLOW},
                           [f"f{i}" for i in range(N_FEATURES)],
                           "the same data; predictions are class ids"),
    "binary_imbalanced": (3, imbalanced, 2000, 1000,
                          {"objective": "binary:logistic", **SHALLOW}, ["f0"],
                          "about 3 % positives (label f0 > 1.9)"),
    "binary_dominant_feature": (4, dominant, 40000, 5000,
                                {"objective": "binary:logistic", **SHALLOW}, ["f3"],
                                "the label depends on f3 alone"),
    "binary_stalled": (1, binary_two_features, 10000, 2000,
                       {"objective": "binary:logistic", "max_depth": 3, "eta": 0.0},
                       ["f0", "f1"],
                       "eta 0: the trees are built but never move the model"),
    "regression_healthy": (5, linear_all, 10000, 2000,
                           {"objective": "reg:squarederror", "colsample_bynode": 0.3,
                            **SHALLOW},
                           [f"f{i}" for i in range(N_FEATURES)],
                           "regression on all 8 features, shallow trees; each split "
                           "chooses among 30 % of the features, so even the first tree "
                           "spreads its splits"),
    "regression_deep_trees": (6, wiggly, 2000, 1000,
                              {"objective": "reg:squarederror", "max_depth": 10,
                               "min_child_weight": 0, "eta": 0.3},
                              ["f0", "f1", "f2", "f3"],
                              "max_depth 10, min_child_weight 0 on a wiggly target"),
}


def write_trial(out, name):
    import numpy as np
    import xgboost as xgb
    from smdebug import SaveConfig
    from smdebug.xgboost import Hook

    seed, data, n_train, n_val, params, depends_on, about = TRIALS[name]
    rng = np.random.default_rng(seed)
    x, y = data(rng, n_train + n_val)
    x = x.astype("float32")
    dtrain = xgb.DMatrix(x[:n_train], label=y[:n_train])
    dval = xgb.DMatrix(x[n_train:], label=y[n_train:])
    # SHAP values of the first SHAP_ROWS training rows: the hook saves the whole
    # (rows x features+1) matrix once per feature and step, so this bounds the trial's size.
    dshap = xgb.DMatrix(x[:SHAP_ROWS], label=y[:SHAP_ROWS])
    params = {**params, "seed": seed, "nthread": 1}
    hook = Hook(out_dir=out, include_collections=COLLECTIONS,
                save_config=SaveConfig(save_interval=1), train_data=dshap,
                validation_data=dval, hyperparameters=params)
    evals_result = {}
    booster = xgb.train(params, dtrain, num_boost_round=ROUNDS,
                        evals=[(dtrain, "train"), (dval, "validation")],
                        evals_result=evals_result, callbacks=[hook], verbose_eval=False)
    hook.close()

    y_val = y[n_train:]
    facts = {
        "about": about,
        "objective": params["objective"],
        "params": {k: v for k, v in params.items()},
        "rounds": ROUNDS,
        "n_train": n_train,
        "n_val": n_val,
        "features": N_FEATURES,
        "label_depends_on": depends_on,
        "metrics": {f"{d}-{m}": [float(x) for x in v]
                    for d, ms in evals_result.items() for m, v in ms.items()},
    }
    objective = params["objective"]
    if not objective.startswith("reg:"):
        classes, counts = np.unique(y_val.astype(int), return_counts=True)
        facts["val_class_counts"] = {str(int(c)): int(n) for c, n in zip(classes, counts)}
        p = booster.predict(dval)
        if objective == "multi:softprob":
            pred = p.argmax(axis=1)
        elif objective == "multi:softmax":
            pred = p.astype(int)
        else:
            pred = (p > 0.5).astype(int)
        truth = y_val.astype(int)
        facts["val_accuracy"] = float((pred == truth).mean())
        # precision of each predicted class: what Confusion's column test looks at
        facts["val_precision"] = {str(int(c)): float((truth[pred == c] == c).mean())
                                  for c in np.unique(pred)}
        facts["val_recall"] = {str(int(c)): float((pred[truth == c] == c).mean())
                               for c in np.unique(truth)}
    nodes = [max(int(line.split(":")[0]) for line in tree.strip().split("\n"))
             for tree in booster.get_dump()]
    facts["largest_node_id_per_tree"] = nodes
    return facts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", action="append", choices=sorted(TRIALS))
    args = ap.parse_args(argv)
    pc.import_smdebug()
    os.makedirs(args.out, exist_ok=True)
    out = {}
    for name in args.only or TRIALS:
        out[name] = write_trial(os.path.join(args.out, name), name)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
