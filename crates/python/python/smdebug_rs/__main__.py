"""``python -m smdebug_rs run [-m] SCRIPT|MODULE [ARGS…]``: runs an unchanged PyTorch
(plain, Lightning or Hugging Face ``Trainer``) or Keras training script with the
smdebug_rs hook attached from SageMaker's JSON configuration
(``SMDEBUG_CONFIG_FILE_PATH``): a framework's autohook is installed when the
script first imports the framework (PyTorch's right after ``torch``, Keras's right after
``keras``, which ``tf.keras`` imports too), so a script pays for no framework it does not
use; see :mod:`smdebug_rs.pytorch.autohook` and :mod:`smdebug_rs.tensorflow.autohook` for
what is patched and how to opt out (``USE_SMDEBUG=false``). A script that imports
``lightning.pytorch``, ``pytorch_lightning`` or ``transformers.trainer`` gets that trainer's
callback as well (:mod:`smdebug_rs.pytorch.trainer_autohook`): it takes over from the
PyTorch autohook in each trainer it is added to.

The script runs as ``python SCRIPT ARGS`` would run it (``__name__ == "__main__"``,
``sys.argv``, ``sys.path[0]`` its folder). The hooks are closed when the script ends.
"""

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

USAGE = "usage: python -m smdebug_rs run [-m MODULE | SCRIPT] [ARGS...]"
# (the framework's module, its smdebug_rs package): the package's autohook is installed
# right after the script first imports the module.
# Lightning imports torch and transformers.trainer does too, so PyTorch's autohook is
# installed first.
FRAMEWORKS = (("torch", "smdebug_rs.pytorch"), ("keras", "smdebug_rs.tensorflow"),
              ("lightning.pytorch", "smdebug_rs.lightning"),
              ("pytorch_lightning", "smdebug_rs.lightning"),
              ("transformers.trainer", "smdebug_rs.huggingface"))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then()`` once, right after module ``name`` is first executed, by wrapping the
    ``exec_module`` of the spec the other finders give for it."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module, then = loader.exec_module, self.then

        def exec_then(module):
            exec_module(module)
            then()

        loader.exec_module = exec_then
        return spec


def _install_autohooks():
    """Arranges for each framework's autohook to be installed when the script imports the
    framework (at once when it is imported already); returns the list that the installed
    (autohook, singleton_utils) modules are appended to."""
    installed = []

    def installer(package):
        def install():
            try:
                autohook = importlib.import_module(package + ".autohook")
                singleton_utils = importlib.import_module(package + ".singleton_utils")
                autohook.install()
            except Exception as e:  # noqa: BLE001 - the script runs on without the hook
                print(f"smdebug_rs: {package} hook unavailable ({type(e).__name__}: {e}); "
                      "running without it", file=sys.stderr)
                return
            installed.append((autohook, singleton_utils))

        return install

    for module, package in FRAMEWORKS:
        if module in sys.modules:
            installer(package)()
        else:
            sys.meta_path.insert(0, _AfterImport(module, installer(package)))
    return installed


def _remove_pending():
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]


def _run(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__)
        return 0 if argv else 2
    as_module = argv[0] == "-m"
    if as_module:
        argv = argv[1:]
        if not argv:
            print(USAGE, file=sys.stderr)
            return 2
    target = argv[0]
    installed = _install_autohooks()
    try:
        if as_module:
            sys.argv = [target] + argv[1:]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target] + argv[1:]
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    finally:
        _remove_pending()
        for autohook, singleton_utils in installed:
            autohook.uninstall()
            hook = singleton_utils.get_hook()
            if hook is not None:
                hook.close()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "run":
        print(USAGE, file=sys.stderr)
        return 2
    return _run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
