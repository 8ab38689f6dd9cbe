#!/usr/bin/env python3
"""Counts test results from meson's testlog.json files and prints 'N passed, N failed'.

doctest executables report how many test cases passed and failed; those counts are used, and so are
pytest's closing line ('N passed, M failed, K skipped in 1.2s': the meson test `python`). A test
without either summary (a script) counts as one test case. A doctest executable that crashed or
timed out after reporting no failure adds one failure, so a crash is never counted as a pass. Skips are
named on the line before the total."""
import json
import re
import sys

passed = failed = skipped = 0
skipped_where = []  # "name" (a whole test skipped) or "name: N" (N cases skipped inside it)
summary = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")
# pytest's closing line: counts joined by ", " then " in <seconds>s" (with or without the ==== frame)
pytest_line = re.compile(r"^=*\s*(\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s\b", re.M)


def pytest_counts(text):
    """(passed, failed, skipped) of pytest's last summary line, or None. Errors count as failures."""
    found = pytest_line.findall(text)
    if not found:
        return None
    counts = {}
    for part in found[-1].split(", "):
        n, what = part.split(" ", 1)
        counts[what] = counts.get(what, 0) + int(n)
    return (counts.get("passed", 0) + counts.get("xpassed", 0) + counts.get("xfailed", 0),
            counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0),
            counts.get("skipped", 0))


for path in sys.argv[1:]:
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        print(f"summary: cannot read {path}: {e}", file=sys.stderr)
        failed += 1
        continue
    for line in lines:
        if not line.strip():
            continue
        t = json.loads(line)
        ok = t.get("result") in ("OK", "EXPECTEDFAIL")
        skip = t.get("result") == "SKIP"
        found = summary.findall(t.get("stdout", "") or "")
        py = None if found else pytest_counts(t.get("stdout", "") or "")
        if found or py:
            p, f, s = py if py else map(int, found[-1][1:])
            passed += p
            failed += f
            skipped += s
            if s:
                skipped_where.append(f"{t.get('name', '?')}: {s}")
            if not ok and f == 0:
                failed += 1
        elif skip:
            skipped += 1
            skipped_where.append(str(t.get("name", "?")))
        elif ok:
            passed += 1
        else:
            failed += 1
if skipped_where:  # which ones, so a skip is never a surprise (their logs say why)
    print("skipped: " + "; ".join(skipped_where))
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
