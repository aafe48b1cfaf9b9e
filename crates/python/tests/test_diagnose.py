"""smdebug_rs.doctor, smdebug_rs.seal and Trial.health() against the ``smdebug`` binary's
doctor, seal and health on the same trials: the same findings, the same numbers."""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import smdebug_bin, write_preset

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

import smdebug_rs as smd  # noqa: E402
from smdebug_rs.exceptions import SMDebugRuntimeError  # noqa: E402
from smdebug_rs.trials import create_trial  # noqa: E402

STEPS = 6


def write(out, nan_at=None):
    """Steps 0..5 of a weight ``w`` and a gradient ``g``, every step; ``g`` holds a NaN from
    step ``nan_at`` on."""
    with smd.Hook(str(out), save_all=True, save_config=smd.SaveConfig(save_interval=1),
                  worker="worker_0", num_workers=1) as hook:
        for step in range(STEPS):
            hook.step()
            hook.save("w", np.array([1.0 + step, 2.0, 3.0], dtype=np.float32))
            g = np.array([0.1, 0.2, 0.3], dtype=np.float32) * (10.0 ** step)
            if nan_at is not None and step >= nan_at:
                g[1] = np.nan
            hook.save("g", g)
    return str(out)


def index_of(trial, step):
    with open(os.path.join(trial, "index", "000000000", f"{step:012d}_worker_0.json")) as f:
        return json.load(f)


def events_path(trial, step):
    return os.path.join(trial, "events", f"{step:012d}", f"{step:012d}_worker_0.tfevents")


def cli(*args):
    """Runs ``smdebug ARGS``; (exit status, stdout, stderr)."""
    p = subprocess.run([smdebug_bin(), *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    code, out, err = cli(*args, "--json")
    assert code in (0, 1), f"smdebug {args} exited {code}: {err}"
    return code, json.loads(out)


# ---- the damaged trials, each from a good one ----

def healthy(tmp):
    return write(tmp / "t")


def with_nan(tmp):
    return write(tmp / "t", nan_at=3)


def truncated(tmp):
    t = write(tmp / "t")
    ev = events_path(t, 4)
    with open(ev, "rb") as f:
        data = f.read()
    with open(ev, "wb") as f:
        f.write(data[:-10])
    return t


def flipped(tmp):
    t = write(tmp / "t")
    entry = index_of(t, 2)["tensor_payload"][0]
    ev = events_path(t, 2)
    with open(ev, "rb") as f:
        data = bytearray(f.read())
    data[entry["start_idx"] + entry["length"] - 6] ^= 1
    with open(ev, "wb") as f:
        f.write(bytes(data))
    return t


def missing_collections(tmp):
    t = write(tmp / "t")
    os.remove(os.path.join(t, "collections", "000000000", "worker_0_collections.json"))
    return t


def lagging_workers(tmp):
    # Written by the real smdebug: lagging workers, no end marker.
    return write_preset("workers_incomplete", tmp / "t")


TRIALS = [healthy, with_nan, truncated, flipped, missing_collections, lagging_workers]
KINDS = {
    "healthy": [],
    "with_nan": [],
    "truncated": ["corrupt-record"],
    "flipped": ["crc-mismatch"],
    "missing_collections": ["missing-collections"],
    "lagging_workers": ["incomplete-steps", "no-end-marker"],
}


@pytest.mark.parametrize("make", TRIALS, ids=lambda f: f.__name__)
def test_doctor_finds_what_the_cli_finds(tmp_path, make):
    trial = make(tmp_path)
    code, expected = cli_json("doctor", trial)
    got = smd.doctor(trial)
    # The CLI's document is the report without each finding's evidence.
    evidence = [f.pop("evidence") for f in got["findings"]]
    assert got == expected
    assert [f["kind"] for f in got["findings"]] == KINDS[make.__name__]
    assert code == (1 if got["findings"] else 0)
    # The evidence names what `what` says, as data.
    for f, ev in zip(got["findings"], evidence):
        if f["kind"] in ("corrupt-record", "crc-mismatch"):
            (rec,) = ev["records"]
            step = 4 if f["kind"] == "corrupt-record" else 2
            assert (rec["step"], rec["worker"]) == (step, "worker_0")
            assert rec["events_file"] in f["what"]
            assert f"at byte {rec['offset']}" in f["what"]
            assert rec["problem"]["kind"] == ("corrupt" if step == 4 else "crc-mismatch")
        elif f["kind"] == "missing-collections":
            assert ev["missing"] == ["worker_0"]
        elif f["kind"] == "incomplete-steps":
            for w in ev["lagging"]:
                assert w["worker"] in f["what"]


def test_verify_lists_the_bad_records_doctor_names(tmp_path):
    trial = truncated(tmp_path)
    v = smd.verify(trial)
    d = smd.doctor(trial)
    assert v["bad_records"] == d["findings"][0]["evidence"]["records"]
    assert v["entries"] == v["with_crc"] > 0


@pytest.mark.parametrize("make", [healthy, with_nan, truncated], ids=lambda f: f.__name__)
def test_health_reports_what_the_cli_reports(tmp_path, make):
    trial = make(tmp_path)
    code, expected = cli_json("health", trial)
    got = create_trial(trial).health()
    assert got == expected
    bad = got["first_non_finite"]
    assert code == (1 if bad else 0)
    if make is with_nan:
        assert (bad["step"], bad["tensor"], bad["summary"]["nan"]) == (3, "g", 1)
        assert got["first_grew"][0]["tensor"] == "g"
    else:
        assert bad is None


def test_health_options_match_the_cli_flags(tmp_path):
    trial = with_nan(tmp_path)
    _, expected = cli_json("health", trial, "--context", "1", "--growth", "50")
    got = create_trial(trial).health(context=1, growth=50.0)
    assert got == expected
    assert [s["step"] for s in got["timeline"][0]["steps"]] == [2, 3, 4]


SEALED = re.compile(r": sealed (\d+) index files \((\d+) payload CRCs added, (\d+) files already")
WOULD = re.compile(r"sealing would add (\d+) payload CRCs \((\d+) index files already sealed")


def test_seal_counts_what_the_cli_counts(tmp_path):
    # The real smdebug's trials carry no payload CRC.
    original = write_preset("small", tmp_path / "orig")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(original, a)
    shutil.copytree(original, b)

    code, out, err = cli("seal", a, "--dry-run")
    assert code == 0, err
    entries, already = map(int, WOULD.search(out).groups())
    dry = smd.seal(b, dry_run=True)
    assert (dry["entries"], dry["already"], dry["files"], dry["dry_run"]) == \
        (entries, already, 0, True)
    assert entries > 0
    assert smd.doctor(b)["payloads_verifiable"]["with_crc"] == 0

    code, out, err = cli("seal", a)
    assert code == 0, err
    files, entries, already = map(int, SEALED.search(out).groups())
    done = smd.seal(b)
    assert (done["files"], done["entries"], done["already"]) == (files, entries, already)
    assert smd.doctor(b)["payloads_verifiable"] == cli_json("doctor", a)[1]["payloads_verifiable"]
    assert smd.doctor(b)["payloads_verifiable"]["all"] is True
    again = smd.seal(b)
    assert (again["files"], again["entries"], again["already"]) == (0, 0, files)


def test_seal_refuses_a_damaged_trial_as_the_cli_does(tmp_path):
    a = truncated(tmp_path / "a")
    b = truncated(tmp_path / "b")
    code, _, err = cli("seal", a)
    assert code != 0
    with pytest.raises(SMDebugRuntimeError) as e:
        smd.seal(b)
    # The same message, naming the same record (keys relative to the trial).
    assert str(e.value) in err
    assert "not sealed: 1 record(s)" in str(e.value)
    assert "000000000004_worker_0.tfevents at byte" in str(e.value)


def test_a_bad_location_raises():
    with pytest.raises(ValueError, match="nosuchscheme://x"):
        smd.doctor("nosuchscheme://x/y")
