"""smdebug_rs.spark.rule_verdicts on a local Spark: one row per trial and rule, equal to what
`smdebug rules TRIAL --rule … --json` says for each trial of a fleet of healthy and firing
runs; broken trials give error rows instead of failing the job; trials are found below a
prefix."""

import os
import subprocess
import sys
import time

import pytest

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

from conftest import s3_target  # noqa: E402
from spark_helpers import KINDS, cli_verdicts, spark_fixture, write_fleet  # noqa: E402

from smdebug_rs import spark as sms  # noqa: E402

# A list parameter in the CLI's grammar (`collection_names=gradients,weights`) is among them.
RULES = [
    "VanishingGradient",
    "ExplodingTensor:collection_names=gradients,weights,only_nan=True",
    "LossNotDecreasing:num_steps=3",
]
# Which rule each kind of run must fire (healthy runs: none).
FIRES = {"vanishing": "VanishingGradient", "exploding": "ExplodingTensor",
         "rising": "LossNotDecreasing"}
# Seconds a broken trial is waited for (`smdebug rules --timeout`).
TIMEOUT = 1


spark = spark_fixture("test_spark_rules")

@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """8 runs in two groups below one prefix, and a broken trial: an index file that is not
    JSON and no collections file. (A folder with an empty `index/` is no trial: an object
    store cannot even hold one, and `smdebug rules` does not list it.)"""
    base = tmp_path_factory.mktemp("fleet")
    runs = write_fleet(base / "team_a", 4)
    runs.update(write_fleet(base / "team_b" / "nested", 4, first=4))
    broken = base / "team_b" / "broken"
    (broken / "index" / "000000000").mkdir(parents=True)
    (broken / "index" / "000000000" / "000000000000_worker_0.json").write_text("{")
    return {"base": str(base), "runs": runs, "broken": str(broken)}


@pytest.fixture(scope="module")
def verdicts(spark, fleet):
    df = sms.rule_verdicts(spark, fleet["base"], RULES, collections_timeout=TIMEOUT)
    return df, {(r["trial"], r["rule"]): r.asDict() for r in df.collect()}


def test_one_row_per_trial_and_rule_with_the_documented_columns(fleet, verdicts):
    df, rows = verdicts
    assert df.columns == [c for c, _ in sms.VERDICT_COLUMNS]
    trials = sorted(fleet["runs"].values()) + [fleet["broken"]]
    assert sorted({t for t, _ in rows}) == sorted(trials)
    assert len(rows) == df.count() == len(trials) * len(RULES)


def assert_as_the_cli(rows, path):
    """The rows of trial `path` say what `smdebug rules PATH --json` says."""
    code, firings, summary, err = cli_verdicts(path, RULES)
    assert code in (0, 1), err
    for spec in RULES:
        rule = spec.split(":")[0]
        got = rows[(path, rule)]
        fired = firings.get(rule, [])
        assert got["error"] is None, got
        assert got["fired"] == bool(fired), (path, rule)
        assert got["firings"] == summary[rule]["firings"] == len(fired), (path, rule)
        assert got["steps_evaluated"] == summary[rule]["steps_evaluated"], (path, rule)
        assert got["parameters"] == sms.parse_rule(spec)[1]
        if fired:
            first = fired[0]
            assert (got["step"], got["tensor"], got["message"]) == \
                (first["step"], first["tensor"], first["message"]), (path, rule)
            assert (got["mode"], got["mode_step"]) == ("TRAIN", first["step"])
        else:
            assert got["step"] is got["message"] is got["mode"] is None
    assert code == (1 if any(firings.values()) else 0)


def test_verdicts_equal_the_cli_for_each_trial(fleet, verdicts):
    _, rows = verdicts
    for path in fleet["runs"].values():
        assert_as_the_cli(rows, path)


def test_the_fleet_has_healthy_and_firing_runs(fleet, verdicts):
    """What makes the comparison above worth something: each kind fires its own rule only."""
    _, rows = verdicts
    for name, path in fleet["runs"].items():
        kind = name.rsplit("-", 1)[0]
        assert kind in KINDS
        fired = {r for r in (s.split(":")[0] for s in RULES) if rows[(path, r)]["fired"]}
        assert fired == ({FIRES[kind]} if kind in FIRES else set()), name


def test_a_broken_trial_gives_error_rows_and_the_cli_an_error(fleet, verdicts):
    _, rows = verdicts
    for spec in RULES:
        row = rows[(fleet["broken"], spec.split(":")[0])]
        assert row["fired"] is None and row["firings"] is None, row
        assert row["error"] and "collections files" in row["error"], row
    code, _, _, err = cli_verdicts(fleet["broken"], RULES, timeout=TIMEOUT)
    assert code == 2 and "error" in err


def test_trials_given_as_a_list_mix_trials_prefixes_and_missing_paths(spark, fleet, tmp_path):
    one = fleet["runs"]["healthy-000"]
    missing = str(tmp_path / "no-such-trial")
    df = sms.rule_verdicts(spark, [one, os.path.join(fleet["base"], "team_b", "nested"),
                                   missing], ["VanishingGradient"],
                           collections_timeout=TIMEOUT)
    rows = {r["trial"]: r for r in df.collect()}
    nested = [p for p in fleet["runs"].values() if "nested" in p]
    assert sorted(rows) == sorted([one, missing] + nested)
    assert rows[one]["fired"] is False and rows[one]["error"] is None
    assert rows[missing]["error"] is not None and rows[missing]["fired"] is None


def test_steps_window_matches_the_cli(spark, fleet):
    """`start_step`/`end_step` evaluate the steps `--start-step`/`--end-step` do."""
    path = fleet["runs"]["vanishing-001"]
    rule = "VanishingGradient"
    (row,) = sms.rule_verdicts(spark, [path], [rule], start_step=6, end_step=9).collect()
    code, firings, summary, err = cli_verdicts(path, [rule],
                                               extra=["--start-step", "6", "--end-step", "9"])
    assert code == 1, err
    assert row["firings"] == len(firings[rule]) == 3
    assert row["step"] == firings[rule][0]["step"] == 6
    assert row["steps_evaluated"] == summary[rule]["steps_evaluated"] == 3


def test_a_fleet_on_s3_is_discovered_and_judged_as_the_cli_does(spark, fleet):
    """Trials under an s3:// prefix of the test server: found on the driver with pyarrow,
    read by the executors with smdebug_rs, both configured by the AWS_* variables."""
    from pyarrow import fs

    _, bucket = s3_target()
    prefix = f"{bucket}/pytest-smdebug-rs-spark/{os.getpid()}-{time.time_ns()}"
    s3, _ = fs.FileSystem.from_uri(f"s3://{prefix}")
    names = ("healthy-000", "vanishing-001", "rising-003")
    for name in names:
        fs.copy_files(fleet["runs"][name], f"{prefix}/team/{name}", destination_filesystem=s3)
    urls = sorted(f"s3://{prefix}/team/{name}" for name in names)
    assert sms.discover_trials(f"s3://{prefix}") == urls
    df = sms.rule_verdicts(spark, f"s3://{prefix}/", RULES)
    rows = {(r["trial"], r["rule"]): r.asDict() for r in df.collect()}
    assert sorted({t for t, _ in rows}) == urls
    for url in urls:
        assert_as_the_cli(rows, url)
    assert rows[(urls[1], "LossNotDecreasing")]["fired"]


def test_discover_trials_finds_every_trial_and_nothing_else(fleet):
    found = sms.discover_trials(fleet["base"])
    assert found == sorted(list(fleet["runs"].values()) + [fleet["broken"]])
    one = fleet["runs"]["rising-003"]
    assert sms.discover_trials(one) == [one]
    assert sms.is_trial(one) and not sms.is_trial(fleet["base"])
    assert sms.discover_trials(fleet["base"], max_depth=1) == []
    assert sms.discover_trials(os.path.join(fleet["base"], "nothing-here")) == []


def test_rule_specs_take_the_cli_grammar_and_fail_before_any_task(spark, fleet):
    assert sms.parse_rule("ExplodingTensor:collection_names=gradients,weights,only_nan=True") \
        == ("ExplodingTensor", {"collection_names": "gradients,weights", "only_nan": "True"})
    assert sms.parse_rule(("ExplodingTensor", {"only_nan": True, "collection_names":
                                               ["gradients", "weights"]})) \
        == ("ExplodingTensor", {"collection_names": "gradients,weights", "only_nan": "True"})
    for bad, needle in [("NoSuchRule", "unknown rule"), ("VanishingGradient:treshold=1",
                                                         "treshold"),
                        ("X:oops", "key=value"), (":a=1", "no rule name")]:
        with pytest.raises(ValueError, match=needle):
            sms.rule_verdicts(spark, fleet["base"], [bad])


def test_no_trials_give_an_empty_frame_with_the_schema(spark, tmp_path):
    df = sms.rule_verdicts(spark, [], RULES)
    assert df.count() == 0 and df.columns == [c for c, _ in sms.VERDICT_COLUMNS]


def test_importing_smdebug_rs_spark_does_not_import_pyspark():
    code = "import sys, smdebug_rs, smdebug_rs.spark; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
