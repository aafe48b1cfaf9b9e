"""``smdebug.xgboost``: ``Hook``, smdebug's XGBoost hook as an ``xgboost.train`` callback
(see :mod:`smdebug_rs.xgboost.hook`), and ``parse_tree_model``."""

from smdebug_rs.xgboost.hook import Hook
from smdebug_rs.xgboost.utils import parse_tree_model

__all__ = ["Hook", "parse_tree_model"]
