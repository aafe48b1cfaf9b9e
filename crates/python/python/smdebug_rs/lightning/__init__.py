"""``smdebug_rs.lightning``: a Lightning 2.x callback that follows the trainer with one
:class:`smdebug_rs.pytorch.Hook`.

    import lightning.pytorch as L
    from smdebug_rs.lightning import DebuggerCallback

    cb = DebuggerCallback(out_dir="/tmp/run", include_collections=["weights", "gradients",
                                                                  "losses"])
    L.Trainer(callbacks=[cb], max_epochs=2).fit(module, train_loader, val_loader)

``DebuggerCallback`` is a ``lightning.pytorch.Callback`` (a ``pytorch_lightning.Callback``
when only ``pytorch_lightning`` is installed); ``PLDebuggerCallback`` is the same for
``pytorch_lightning`` beside ``lightning``. Each takes the PyTorch hook's constructor
arguments, or ``json_file_path=`` (a SageMaker JSON configuration), or ``hook=``.

What it does (see docs/src/python.md, "Lightning"):

* the LightningModule is registered (``register_module``) at ``setup``, the trainer's
  optimizers (``register_optimizer``) at ``on_fit_start``: a TRAIN step is one optimizer
  step, so TRAIN mode steps follow ``trainer.global_step``; the hook's optimizer step
  pre-hook, which saves the gradients, runs at ``on_before_optimizer_step`` (Lightning's
  forward and backward run inside ``optimizer.step``, after its pre-hooks), its post-hook
  when the batch that stepped ends (a step a ``GradScaler`` skipped too);
* modes: training TRAIN, validation (the sanity check too) and test EVAL, predict PREDICT;
* ``loss_output_<n>``: the loss each backward starts from (``on_before_backward``:
  ``training_step``'s loss divided by ``accumulate_grad_batches``, unscaled);
* ``scalar/learning_rate`` at each optimizer step, and ``scalar/<name>`` for each number the
  trainer logged (``trainer.logged_metrics``) when it logs it;
* the hook is closed at the end of ``fit`` (``teardown``) and on an exception
  (``on_exception``): a later ``trainer.test`` with the same callback saves nothing.

A failure inside a callback method is logged once and closes the hook; training goes on.
"""

from smdebug_rs.lightning.callback import PACKAGES, callback_class

__all__ = list(PACKAGES)


def __getattr__(name):
    if name == "DebuggerCallback":
        try:
            return callback_class(name)
        except ImportError:
            return callback_class("PLDebuggerCallback")
    if name in PACKAGES:
        return callback_class(name)
    raise AttributeError(f"module 'smdebug_rs.lightning' has no attribute {name!r}")
