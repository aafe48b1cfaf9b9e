#!/usr/bin/env python3
"""Time the REAL smdebug 1.0.34 writer writing the trial the hook benchmark
`hook/write_trial_large` writes (crates/hook/benches/hook.rs): STEPS steps of TENSORS
float32 100x100 tensors (half `layer_NN.weight`, half `gradient/layer_NN.weight`) plus a
0-d loss, every step saved, with smdebug's own FileWriter (events + index file per step),
CollectionManager.export and training_has_ended — the write sequence of its hook, without
a framework. Values are made before timing; each repetition writes a fresh trial.

  hook_bench_write.py [--steps 30] [--tensors 100] [--repeat 3] [--dir D]

Defaults follow the Rust benchmark's environment variables SMDEBUG_HOOK_BENCH_STEPS and
SMDEBUG_HOOK_BENCH_TENSORS (30 and 100; the `large` preset has 300 steps). Prints JSON:
{"steps", "tensors", "bytes" (tensor data), "runs": [seconds...], "best_s",
 "mb_per_s" (1e6 bytes of tensor data per second, best run), "tensors_per_s"}.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int,
                    default=int(os.environ.get("SMDEBUG_HOOK_BENCH_STEPS", "30")))
    ap.add_argument("--tensors", type=int,
                    default=int(os.environ.get("SMDEBUG_HOOK_BENCH_TENSORS", "100")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()

    pc.import_smdebug()
    import numpy as np
    from smdebug.core.access_layer.utils import training_has_ended
    from smdebug.core.collection import Collection
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.modes import ModeKeys
    from smdebug.core.save_config import SaveConfig
    from smdebug.core.writer import FileWriter

    half = args.tensors // 2
    names = [f"layer_{i:02d}.weight" for i in range(half)]
    names += [f"gradient/layer_{i:02d}.weight" for i in range(args.tensors - half)]
    values = [
        ((np.arange(10000, dtype=np.float64).reshape(100, 100) + t) * 1e-4).astype(np.float32)
        for t in range(args.tensors)
    ]
    loss = np.asarray(np.float32(0.5))
    data_bytes = args.steps * (sum(v.nbytes for v in values) + loss.nbytes)

    runs = []
    for _ in range(args.repeat):
        parent = tempfile.mkdtemp(dir=args.dir)
        out = os.path.join(parent, "t")
        # The previous run's trial is deleted; flush it (and its writeback) before timing,
        # as the Rust bench does before each iteration.
        if hasattr(os, "sync"):
            os.sync()
        t0 = time.perf_counter()
        weights = Collection("weights", include_regex=["^(?!gradient).*weight"])
        grads = Collection("gradients", include_regex=["^gradient"])
        losses = Collection("losses", include_regex=["[Ll]oss_(?!input).*output"])
        for c in (weights, grads, losses):
            c.save_config = SaveConfig(save_interval=1)
        for step in range(args.steps):
            with FileWriter(trial_dir=out, step=step, worker="worker_0") as fw:
                for n, v in zip(names, values):
                    fw.write_tensor(tdata=v, tname=n, mode=ModeKeys.TRAIN, mode_step=step)
                fw.write_tensor(tdata=loss, tname="CrossEntropyLoss_output_0",
                                mode=ModeKeys.TRAIN, mode_step=step)
            if step == 0:
                cm = CollectionManager()
                for c in (weights, grads, losses):
                    cm.add(c)
                cm.export(out, "worker_0_collections.json")
        training_has_ended(out)
        runs.append(time.perf_counter() - t0)
        shutil.rmtree(parent, ignore_errors=True)

    best = min(runs)
    json.dump({
        "steps": args.steps,
        "tensors": args.tensors + 1,
        "bytes": data_bytes,
        "runs": runs,
        "best_s": best,
        "mb_per_s": data_bytes / 1e6 / best,
        "tensors_per_s": args.steps * (args.tensors + 1) / best,
    }, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
