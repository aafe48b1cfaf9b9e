"""``python -m smdebug_rs run [-m] SCRIPT|MODULE [ARGS…]``: runs an unchanged PyTorch
or Keras training script with the smdebug_rs hook attached from SageMaker's JSON
configuration (``SMDEBUG_CONFIG_FILE_PATH``): the autohook of every framework that imports
is installed (PyTorch's if ``torch`` imports, Keras's if ``tensorflow`` and ``keras`` do);
see :mod:`smdebug_rs.pytorch.autohook` and :mod:`smdebug_rs.tensorflow.autohook` for what
is patched and how to opt out (``USE_SMDEBUG=false``).

The script runs as ``python SCRIPT ARGS`` would run it (``__name__ == "__main__"``,
``sys.argv``, ``sys.path[0]`` its folder). The hooks are closed when the script ends.
"""

import importlib
import os
import runpy
import sys

USAGE = "usage: python -m smdebug_rs run [-m MODULE | SCRIPT] [ARGS...]"
# (framework, its smdebug_rs package): each whose framework imports gets its autohook.
FRAMEWORKS = (("PyTorch", "smdebug_rs.pytorch"), ("Keras", "smdebug_rs.tensorflow"))


def _install_autohooks():
    """Installs the autohook of every framework that imports; returns their (autohook,
    singleton_utils) modules. Says on stderr why when none does."""
    installed, missing = [], []
    for framework, package in FRAMEWORKS:
        try:
            autohook = importlib.import_module(package + ".autohook")
            singleton_utils = importlib.import_module(package + ".singleton_utils")
        except ImportError as e:  # framework absent: its scripts cannot run here anyway
            missing.append(f"{framework}: {e}")
            continue
        autohook.install()
        installed.append((autohook, singleton_utils))
    if not installed:
        print("smdebug_rs: no framework hook available (" + "; ".join(missing)
              + "); running without one", file=sys.stderr)
    return installed


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
