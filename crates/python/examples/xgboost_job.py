#!/usr/bin/env python3
"""An XGBoost classification job with smdebug_rs.xgboost.Hook as the callback, then two
built-in rules on its trial.

  python xgboost_job.py [OUT_DIR]
"""

import sys
import tempfile

import numpy as np
import xgboost as xgb

from smdebug_rs import SaveConfig, rules
from smdebug_rs.exceptions import NoMoreData, RuleEvaluationConditionMet
from smdebug_rs.trials import create_trial
from smdebug_rs.xgboost import Hook

out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp() + "/xgb"
rng = np.random.default_rng(1)
x = rng.standard_normal((3000, 8)).astype(np.float32)
y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)  # two of eight features matter
dtrain = xgb.DMatrix(x[:2500], label=y[:2500])
dval = xgb.DMatrix(x[2500:], label=y[2500:])

hook = Hook(
    out_dir=out,
    include_collections=["metrics", "feature_importance", "trees", "average_shap"],
    save_config=SaveConfig(save_interval=2),
    train_data=xgb.DMatrix(x[:100]),  # SHAP values of these rows
    validation_data=dval,
)
params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "nthread": 1}
xgb.train(params, dtrain, num_boost_round=10,
          evals=[(dtrain, "train"), (dval, "validation")], callbacks=[hook],
          verbose_eval=False)  # the callback closes the hook when training ends

trial = create_trial(out)
print("collections:", sorted(trial.collections()))
print("validation logloss:", trial.tensor("validation-logloss").values())
for name in ("FeatureImportanceOverweight", "TreeDepth"):
    try:
        rules.invoke_rule(getattr(rules, name)(trial), raise_eval_cond=True)
    except RuleEvaluationConditionMet as e:
        print(f"{name}: fired at step {e.step}")
    except NoMoreData:
        print(f"{name}: no issue found")
