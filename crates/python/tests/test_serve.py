"""smdebug_rs.serve: the live web view started from Python (as a notebook would), serving a
trial that the test's hook is still writing; stopped with ``.stop()`` or a ``with`` block."""

import json
import os
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")

import smdebug_rs as smd  # noqa: E402


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def runs(server):
    return get(server.url.split("?")[0] + "api/runs")["runs"]


def eventually(what, f, limit=30.0):
    start = time.time()
    while True:
        v = f()
        if v:
            return v
        assert time.time() - start < limit, "timed out waiting for " + what
        time.sleep(0.05)


def test_serve_follows_a_trial_the_hook_writes(tmp_path):
    out = tmp_path / "jobs" / "run-1"
    hook = smd.Hook(str(out), save_all=True, save_config=smd.SaveConfig(save_interval=1),
                    worker="worker_0", num_workers=1)
    try:
        for step in range(3):
            hook.step()
            hook.save("loss", np.array([1.0 / (step + 1)], dtype=np.float32))
        server = smd.serve([str(tmp_path / "jobs")], port=0, rules=[])
        assert isinstance(server, smd.Server)
        assert server.running
        assert server.url.startswith("http://127.0.0.1:") and server.token is None
        run = eventually("the run", lambda: [r for r in runs(server) if r["last_step"] is not None])
        assert run[0]["name"] == "run-1"
        assert run[0]["status"] == "live"
        for step in range(3, 8):
            hook.step()
            hook.save("loss", np.array([1.0 / (step + 1)], dtype=np.float32))
        hook.flush()
        # The steps the hook has finished show while it still writes.
        eventually("step 6", lambda: runs(server)[0]["last_step"] >= 6)
    finally:
        hook.close()
    eventually("the run ended", lambda: runs(server)[0]["status"] == "ended")
    detail = get(server.url + "api/runs/" + run[0]["id"])
    loss = [c for c in detail["data"]["scalars"] if c["title"] == "loss"][0]
    assert loss["series"][0]["steps"] == list(range(8))
    base = server.url
    server.stop()
    assert not server.running
    server.stop()
    with pytest.raises(urllib.error.URLError):
        get(base + "api/runs")


def test_serve_off_loopback_requires_a_token_and_stops_with_the_block(tmp_path):
    out = tmp_path / "run"
    with smd.Hook(str(out), save_all=True, save_config=smd.SaveConfig(save_interval=1),
                  worker="worker_0", num_workers=1) as hook:
        hook.step()
        hook.save("loss", np.array([0.5], dtype=np.float32))
    with smd.serve([str(out)], host="0.0.0.0", port=0, rules=[]) as server:
        assert server.token and server.url.endswith("?token=" + server.token)
        port = server.url.split(":")[2].split("/")[0]
        with pytest.raises(urllib.error.HTTPError) as e:
            get(f"http://127.0.0.1:{port}/api/runs")
        assert e.value.code == 401
        listed = get(f"http://127.0.0.1:{port}/api/runs?token={server.token}")["runs"]
        assert [r["name"] for r in listed] == [str(out)]
    assert not server.running
    with pytest.raises(ValueError, match="token"):
        smd.serve([str(out)], port=0, token="a b")
    with pytest.raises(ValueError, match="no path"):
        smd.serve([], port=0)
