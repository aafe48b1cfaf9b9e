"""Fleets of trials on Apache Spark: rule verdicts for hundreds of training jobs, and the
exported tables of every run as one table for Spark SQL.

    from pyspark.sql import SparkSession
    from smdebug_rs.spark import rule_verdicts, read_fleet_table

    spark = SparkSession.builder.getOrCreate()
    verdicts = rule_verdicts(spark, "s3://bucket/jobs/", ["VanishingGradient",
                             "LossNotDecreasing:mode=TRAIN"])
    verdicts.filter("fired").show()

``rule_verdicts`` evaluates the built-in rules (``smdebug_rs.rules``) on the executors, one
Spark task per trial, and gives one row per trial and rule with the verdict
``smdebug rules TRIAL --rule … --json`` prints for that trial. ``read_fleet_table`` reads
the tables ``smdebug export TRIAL ROOT/run=<name>`` wrote for each run as one DataFrame
with the Hive partition column ``run``. The project's docs/src/spark.md has the recipe for
a cluster (shipping the wheel to the executors, S3 configuration) and the SQL.

pyspark is imported only inside these functions: ``import smdebug_rs`` never needs it.
"""

__all__ = [
    "VERDICT_COLUMNS",
    "parse_rule",
    "is_trial",
    "discover_trials",
    "evaluate_trial",
    "rule_verdicts",
    "read_fleet_table",
]

# The row of one (trial, rule): name and Spark SQL type, in order.
VERDICT_COLUMNS = (
    ("trial", "string"),  # the trial's path or URL, as given or discovered
    ("rule", "string"),  # the built-in rule's name (the `rule` of `smdebug rules --json`)
    ("parameters", "map<string,string>"),  # the rule's parameters, as strings
    ("fired", "boolean"),  # null when `error` is set
    ("step", "bigint"),  # global step of the first firing
    ("mode", "string"),  # TRAIN, EVAL, PREDICT or GLOBAL: the mode of that step
    ("mode_step", "bigint"),  # that step within its mode
    ("tensor", "string"),  # the tensor that met the condition first, when one did
    ("message", "string"),  # the first firing's message
    ("firings", "bigint"),  # how often the rule fired
    ("steps_evaluated", "bigint"),
    ("error", "string"),  # `ExceptionClass: message` when the trial or rule failed
)

def parse_rule(spec):
    """``(name, {parameter: value})`` of a rule given as ``smdebug rules --rule`` takes it,
    ``"Name[:key=value,…]"`` (an item without ``=`` continues the previous value, so
    ``collection_names=a,b`` is one list), or as a ``(name, parameters)`` pair whose values
    are strings or values the rule classes take (``True``, ``0.5``, lists). The grammar and
    the check of the name and parameter names are the command line's own (``smdebug_rules``
    in Rust); a wrong one raises ``SMDebugValueError`` (a ``ValueError``)."""
    from smdebug_rs import _native
    from smdebug_rs.rules.builtin_rules import _param_text

    if isinstance(spec, str):
        return _native.rule_arg(spec)
    name, given = spec
    params = {k: _param_text(v, []) for k, v in dict(given or {}).items()}
    return _native.rule_arg(name, params)


def _discovered(root):
    """``[(location, depth)]`` of the trials at or below ``root``, found as ``smdebug rules``
    finds them (``smdebug_fleet::discover``: one listing of the prefix, object stores
    configured by the same AWS_* / GOOGLE_* / AZURE_* environment as the reader)."""
    from smdebug_rs import _native

    return _native.discover_trials(root)


def is_trial(path):
    """Whether ``path`` (a local folder or an object-store URL) holds a trial: an ``index/``
    or ``collections/`` folder directly below it."""
    return any(depth == 0 for _, depth in _discovered(path))


def discover_trials(root, max_depth=8):
    """The trials at or below ``root`` (a local folder or ``s3://``/``gs://`` prefix),
    sorted: every folder with ``index/`` or ``collections/`` directly below it, at most
    ``max_depth`` levels down. A trial inside a trial's folder belongs to the outer one."""
    return [location for location, depth in _discovered(root) if depth <= max_depth]


def _trial_paths(trials, max_depth):
    """``trials`` (one path or a list) as trial paths: a path that is a trial stays, one
    with trials below it becomes them, and one with neither stays too, so that it gets
    its error rows."""
    given = [trials] if isinstance(trials, str) else list(trials)
    out = []
    for path in given:
        found = _discovered(path)
        if any(depth == 0 for _, depth in found):
            out.append(path)
        else:
            out.extend([p for p, depth in found if depth <= max_depth] or [path])
    return list(dict.fromkeys(out))


def _error_text(e):
    return f"{type(e).__name__}: {e}"


def evaluate_trial(path, rules, start_step=0, end_step=None, collections_timeout=60.0):
    """The verdict rows (dicts keyed by :data:`VERDICT_COLUMNS`) of the built-in ``rules``
    (``(name, parameters)`` pairs, see :func:`parse_rule`) over the trial at ``path``, as
    one Spark task computes them. Never raises for a bad trial: a trial that cannot be
    opened gives every rule's row with ``error`` set and ``fired`` null; a rule that fails
    gives its own row so."""
    from smdebug_rs import exceptions
    from smdebug_rs import rules as builtin
    from smdebug_rs.trials import create_trial

    def row(name, params, **values):
        r = {c: None for c, _ in VERDICT_COLUMNS}
        r.update(trial=path, rule=name, parameters=dict(params), **values)
        return r

    try:
        trial = create_trial(path, collections_timeout=collections_timeout)
    except Exception as e:  # noqa: BLE001 - a broken trial is a row, not a failed job
        return [row(name, params, error=_error_text(e)) for name, params in rules]
    rows = []
    for name, params in rules:
        try:
            rule = getattr(builtin, name)(trial, **params)
            try:
                builtin.invoke_rule(rule, start_step=start_step, end_step=end_step)
            except exceptions.NoMoreData:
                pass  # the end of training: every step was evaluated
            firings = rule.firings
            values = dict(
                fired=bool(firings),
                firings=len(firings),
                steps_evaluated=rule.last_evaluation["steps_evaluated"],
            )
            if firings:
                first = min(firings, key=lambda f: f["step"])
                mode, mode_step = trial.mode_modestep(first["step"])
                values.update(step=first["step"], tensor=first["tensor"],
                              message=first["message"], mode_step=mode_step,
                              mode=mode.name if mode is not None else None)
            rows.append(row(name, params, **values))
        except Exception as e:  # noqa: BLE001 - one failing rule is one row
            rows.append(row(name, params, error=_error_text(e)))
    return rows


def rule_verdicts(spark, trials, rules, *, start_step=0, end_step=None,
                  collections_timeout=60.0, max_depth=8, partitions=None):
    """A DataFrame of one row per trial and rule (:data:`VERDICT_COLUMNS`): whether the
    built-in rule fired on the trial, where first, and why.

    ``trials``: a path or URL, or a list of them; each is a trial, or a prefix whose trials
    are found below it (:func:`discover_trials`, on the driver). ``rules``: rule specs as
    :func:`parse_rule` takes them (``"VanishingGradient"``,
    ``"ExplodingTensor:collection_names=gradients,weights,only_nan=True"``,
    ``("LossNotDecreasing", {"mode": "TRAIN"})``); a wrong name or parameter name raises
    here, before any task runs. ``start_step``/``end_step``: the global steps evaluated
    (``end_step`` exclusive; None: to the end of training), as ``smdebug rules
    --start-step/--end-step``. ``collections_timeout``: seconds a task waits for a trial's
    collections file (``smdebug rules --timeout``). ``partitions``: Spark partitions (default
    one per trial, so that a slow trial holds up no other).

    Each task opens its trial with ``smdebug_rs`` on the executor, so every executor needs
    the package (docs/src/spark.md). A trial that cannot be read or a rule that fails gives
    rows with ``error`` set instead of failing the job. The DataFrame is lazy, as Spark's
    are: each action evaluates the rules again, so ``cache()`` or write it when it is used
    more than once.
    """
    specs = [parse_rule(r) for r in rules]
    paths = _trial_paths(trials, max_depth)
    schema = ", ".join(f"`{c}` {t}" for c, t in VERDICT_COLUMNS)
    if not paths or not specs:
        return spark.createDataFrame([], schema)
    columns = [c for c, _ in VERDICT_COLUMNS]

    def task(path):
        return [tuple(r[c] for c in columns)
                for r in evaluate_trial(path, specs, start_step, end_step, collections_timeout)]

    rdd = spark.sparkContext.parallelize(paths, partitions or len(paths))
    return spark.createDataFrame(rdd.flatMap(task), schema)


def read_fleet_table(spark, root, table="tensors", layout="single"):
    """Table ``table`` (``tensors``, ``reductions``, ``scalars`` or ``steps``) of every run
    exported below ``root`` by ``smdebug export TRIAL ROOT/run=<name> --layout LAYOUT``, as
    one DataFrame with the column ``run``.

    ``layout="single"`` (each table one file, ``ROOT/run=<name>/<table>.parquet``): ``run``
    is a Hive partition column, so a filter on it reads only that run's files; Spark infers
    its type (run names that all look like numbers become numbers unless
    ``spark.sql.sources.partitionColumnTypeInference.enabled`` is false).
    ``layout="partitioned"`` (``ROOT/run=<name>/<table>/step_bucket=B/part-K.parquet``, for
    trials too large for one file): Spark's partition discovery stops at the ``<table>``
    folder, so ``run`` is taken from each file's path instead (a string; without the
    ``step_bucket`` column, ``step`` has the same information)."""
    if table not in ("tensors", "reductions", "scalars", "steps"):
        raise ValueError(f"unknown table {table!r}: tensors, reductions, scalars or steps")
    root = root.rstrip("/")
    if layout == "single":
        return spark.read.option("basePath", root).parquet(f"{root}/run=*/{table}.parquet")
    if layout == "partitioned":
        from pyspark.sql import functions as F

        df = spark.read.option("recursiveFileLookup", "true").parquet(f"{root}/run=*/{table}")
        path = F.col("_metadata.file_path")
        return df.withColumn("run", F.url_decode(F.regexp_extract(path, "/run=([^/]+)/", 1)))
    raise ValueError(f"unknown layout {layout!r}: single or partitioned")
