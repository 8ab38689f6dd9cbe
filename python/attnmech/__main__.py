"""`python -m attnmech ...` (and the `attnmech` console script of the wheel): runs the attnmech CLI that the wheel
carries in attnmech/_native/bin, with the same arguments and exit code."""
import os
import sys


def cli_path():
    """The CLI inside the package (wheel layout), else ATTNMECH_CLI, else None."""
    p = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "bin", "attnmech")
    if os.path.isfile(p):
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
