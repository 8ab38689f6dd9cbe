#!/usr/bin/env python3
"""Counts test results from meson's testlog.json files and prints 'N passed, N failed'.

doctest executables report how many test cases passed and failed; those counts are used. A test
without a doctest summary (a script) counts as one test case. A doctest executable that crashed or
timed out after reporting no failure adds one failure, so a crash is never counted as a pass."""
import json
import re
import sys

passed = failed = skipped = 0
summary = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")
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
        if found:
            _, p, f, s = map(int, found[-1])
            passed += p
            failed += f
            skipped += s
            if not ok and f == 0:
                failed += 1
        elif skip:
            skipped += 1
        elif ok:
            passed += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
