"""`python -m attnmech ...` (and the `attnmech` console script of the wheel): runs the attnmech CLI that the wheel
carries in .attnmech.mesonpy.libs/bin (beside the package), with the same arguments and exit code."""
import os
import sys

from ._where import native_dir


def cli_path():
    """The CLI of the wheel, else ATTNMECH_CLI, else None."""
    d = native_dir()
    p = os.path.join(d, "bin", "attnmech") if d else None
    if p and os.path.isfile(p):
        return p
    return os.environ.get("ATTNMECH_CLI")


def main(argv=None):
    exe = cli_path()
    if not exe:
        print("attnmech: no CLI inside this package (a source checkout: use build/tools/attnmech)", file=sys.stderr)
        return 1
    args = sys.argv[1:] if argv is None else list(argv)
    os.execv(exe, [exe] + args)


if __name__ == "__main__":
    sys.exit(main())
