#!/usr/bin/env python3
"""README.md's (and docs/ pages') commands, run as written against the build (meson test `readme-commands`).

Every fenced ```sh and ```python block of README.md and of the docs/ pages named on the command line is read;
in docs/, `attnmech` is the installed CLI, here the build's (first on PATH). A shell block is split into command lines (a line
ending in a backslash continues); each line runs with `bash -c`, literally, in a scratch directory that holds
`build` (a link to the build tree), `tests`, `examples` and `python` (links to the source's), in the order the
README gives, so a line may use what an earlier one wrote (`plot out2` after `run … --out out2`). A Python block
runs as one script through `meson devenv -C build -w . PYTHON SCRIPT`, as the README says to run it from a build
tree (PYTHON: the Python with NumPy that runs this check).

What is not run, and why (each skipped line is printed with its reason):
* a line whose comment states a time of 10 s or more ("# 2 min 15 s"): the suite runs the cheap lines only; the
  slow ones are run by hand on a fresh machine before a release (their times are measured, and say on what);
* a block preceded by `<!-- readme-test: skip REASON -->`: lines that change the system (install into a prefix,
  apt-get, pip) or templates with placeholder files; tests/cli/test_install.sh and test_cmake.sh check those
  paths on a moved --destdir install;
* `bash .ci/main` and `bash .ci/test`: the two commands themselves (CI runs them);
* a line that names the `--out` directory of a skipped line (`--aggregate S` after a skipped `sweep … --out S`).
A line that fails (non-zero exit, or more than 120 s) fails the test with its output. An unstated time is a
promise of "cheap": such a line that takes 10 s or more is reported as a failure too, so a slow line must say so.

usage: check_readme_commands.py SOURCE_ROOT BUILD_ROOT [DOC.md ...]   (DOC: a file of docs/)
"""
import os
import re
import subprocess
import sys
import tempfile
import time

SLOW_S = 10.0
TIMEOUT_S = 120.0
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|min|s)\b")
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s*(.*?)\s*-->")
THE_TWO = ("bash .ci/main", "bash .ci/test")
OUT_DIR = re.compile(r"--out\s+(\S+)")


def blocks(text):
    """(language, first line number, lines, skip reason or None) for each fenced block."""
    lines = text.splitlines()
    i, skip = 0, None
    while i < len(lines):
        m = SKIP_MARK.search(lines[i])
        if m:
            skip = m.group(1) or "marked"
        fence = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if fence:
            lang, start, body = fence.group(1), i + 2, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            yield lang, start, body, skip
            skip = None
        i += 1


def stated_seconds(comment):
    """The time a comment states ("2 min 15 s", "< 1 s", "about 3 min"), summed; None when it states none."""
    found = DURATION.findall(comment)
    if not found:
        return None
    unit = {"h": 3600.0, "min": 60.0, "s": 1.0}
    return sum(float(v) * unit[u] for v, u in found)


def shell_lines(start, body):
    """(line number, command, comment) for each command line of a shell block."""
    out, buf, first = [], "", None
    for k, raw in enumerate(body):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if first is None:
            first = start + k
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        cmd, comment = split_comment(buf)
        out.append((first, cmd.strip(), comment))
        buf, first = "", None
    return out


def split_comment(line):
    """The command and its trailing `# comment` (a # outside quotes, after whitespace)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i > 0 and line[i - 1].isspace():
            return line[:i], line[i + 1:]
    return line, ""


def run(argv, cwd, env, label):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
        rc, out = p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"").decode(errors="replace")
    dt = time.monotonic() - t0
    return rc, out, dt


def main(src, build, docs):
    work = tempfile.mkdtemp(prefix="am-readme-")
    for name, target in (("build", build), ("tests", os.path.join(src, "tests")),
                         ("examples", os.path.join(src, "examples")), ("python", os.path.join(src, "python"))):
        os.symlink(target, os.path.join(work, name))
    env = dict(os.environ)
    for k in ("AM_PLUGIN_PATH", "PYTHONPATH", "ATTNMECH_LIBRARY", "ATTNMECH_REPORT_LIBRARY"):
        env.pop(k, None)  # the CLI finds the build tree's plugins by itself, as the README says
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # docs/ write `attnmech` for the installed CLI: here the build's, first on PATH
    os.mkdir(os.path.join(work, ".bin"))
    os.symlink(os.path.join(build, "tools", "attnmech"), os.path.join(work, ".bin", "attnmech"))
    # and `python3` is the Python running this check (the one with NumPy that meson found), as on Debian
    os.symlink(sys.executable, os.path.join(work, ".bin", "python3"))
    env["PATH"] = os.path.join(work, ".bin") + os.pathsep + env.get("PATH", "")
    ran = skipped = 0
    failures = []
    for doc in ["README.md"] + [os.path.join("docs", d) for d in docs]:
        text = open(os.path.join(src, doc), encoding="utf-8").read()
        r, k, f = check_file(doc, text, work, env)
        ran, skipped = ran + r, skipped + k
        failures += f
    for where, cmd, rc, out in failures:
        print(f"\nFAILED {where}: {cmd}\n  exit: {rc}\n" + "\n".join("  | " + s for s in out.splitlines()[-30:]))
    print(f"\n{ran} command lines/blocks ran, {skipped} skipped, {len(failures)} failed")
    if ran == 0:
        print("no command ran: the extraction is broken")
        return 1
    return 1 if failures else 0


def check_file(doc, text, work, env):
    ran = skipped = 0
    failures = []
    not_made = set()  # --out directories of skipped lines: a later line that names one is skipped too
    for lang, start, body, skip in blocks(text):
        if lang not in ("sh", "python"):
            continue
        if lang == "python":
            if skip:
                print(f"{doc}:{start}: skipped python block ({skip})")
                skipped += 1
                continue
            script = os.path.join(work, f"{os.path.basename(doc)[:-3]}_{start}.py")
            open(script, "w", encoding="utf-8").write("\n".join(body) + "\n")
            rc, out, dt = run(["meson", "devenv", "-C", "build", "-w", ".", sys.executable, script], work, env,
                              f"python block at line {start}")
            ran += 1
            print(f"{doc}:{start}: python block: exit {rc}, {dt:.1f} s")
            if rc != 0 or dt >= TIMEOUT_S:
                failures.append((f"{doc}:{start}", "python block", rc, out))
            continue
        for line_no, cmd, comment in shell_lines(start, body):
            secs = stated_seconds(comment)
            tokens = set(cmd.split())
            if skip:
                why = skip
            elif cmd in THE_TWO:
                why = "the README's two commands (CI runs them)"
            elif secs is not None and secs >= SLOW_S:
                why = f"states {comment.strip()[:40]!r} (>= {SLOW_S:.0f} s)"
            elif tokens & not_made:
                why = f"reads {sorted(tokens & not_made)[0]}, the output of a skipped line"
            else:
                why = None
            if why:
                print(f"{doc}:{line_no}: skipped: {cmd[:70]} ({why})")
                skipped += 1
                not_made.update(OUT_DIR.findall(cmd))
                continue
            rc, out, dt = run(["bash", "-c", cmd], work, env, cmd)
            ran += 1
            print(f"{doc}:{line_no}: {cmd[:70]}: exit {rc}, {dt:.1f} s")
            if rc != 0:
                failures.append((f"{doc}:{line_no}", cmd, rc, out))
            elif secs is None and dt >= SLOW_S:
                failures.append((f"{doc}:{line_no}", cmd, f"took {dt:.0f} s but states no time", out))
    return ran, skipped, failures


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3:]))
