#!/usr/bin/env python3
"""Make the installed `xgboost-cpu` wheel visible to smdebug 1.0.34 as the distribution
`xgboost` (run by `cargo xtask` after installing tests/peer/requirements.txt).

Why: smdebug.xgboost decides which hook class to define by asking
`pkg_resources.get_distribution("xgboost").version` (smdebug/xgboost/utils.py,
`is_xgb_1_3_and_later`). The `xgboost-cpu` wheel installs the very same `xgboost` import
package, but under the distribution name `xgboost-cpu`, so that lookup raises
DistributionNotFound and `import smdebug.xgboost` fails. The full `xgboost` wheel is ~224 MB
(GPU libraries); `xgboost-cpu` is small.

What: writes `<site-packages>/xgboost-<V>.dist-info/` with METADATA (Name: xgboost,
Version: V = the installed xgboost-cpu version, no requirements), INSTALLER and an empty
RECORD, and removes shims of other versions. Nothing is imported from it; pip lists it as
`xgboost V` and `pip check` stays clean (it declares no requirements). Idempotent.

  xgboost_dist_shim.py            write or refresh the shim, print its path

Without it: `import smdebug.xgboost` raises pkg_resources.DistributionNotFound ("The
'xgboost' distribution was not found"); `cargo xtask`'s smoke import checks it is there.
"""

import importlib.metadata as md
import pathlib
import shutil
import sys
import sysconfig

SHIM_INSTALLER = "smdebug-rs-xtask\n"


def site_packages():
    return pathlib.Path(sysconfig.get_paths()["purelib"])


def metadata_text(version):
    return (
        "Metadata-Version: 2.1\n"
        "Name: xgboost\n"
        f"Version: {version}\n"
        "Summary: smdebug-rs test shim: the import package `xgboost` installed by the "
        f"xgboost-cpu {version} wheel, under the distribution name smdebug 1.0.34 looks up\n"
    )


def main():
    version = md.version("xgboost-cpu")
    root = site_packages()
    target = root / f"xgboost-{version}.dist-info"
    for old in root.glob("xgboost-*.dist-info"):
        if old != target and (old / "INSTALLER").is_file() and \
                (old / "INSTALLER").read_text() == SHIM_INSTALLER:
            shutil.rmtree(old)
    target.mkdir(exist_ok=True)
    (target / "METADATA").write_text(metadata_text(version))
    (target / "INSTALLER").write_text(SHIM_INSTALLER)
    (target / "RECORD").write_text("")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
