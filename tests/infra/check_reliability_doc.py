#!/usr/bin/env python3
"""docs/reliability.md's table of bad inputs names, per row, the test cases that pin it. This check keeps the
table tied to the tests: every quoted test-case name must begin a TEST_CASE (doctest) or be in a test script of
the file the row names ("same" = the file of the row above; a bare file name is looked up under tests/).
Prints one line per dangling reference and exits 1 if there is any."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
doc = (root / "docs/reliability.md").read_text(encoding="utf-8")
table = doc.split("## Bad input", 1)[1].split("\n## ", 1)[0]
tests = root / "tests"
by_name = {}
for p in tests.rglob("*"):
    if p.suffix in (".cpp", ".py", ".sh"):
        by_name.setdefault(p.name, []).append(p)

bad = checked = 0
last = None
for line in table.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 4 or cells[0] in ("Bad input", "---") or set(cells[0]) <= set("-"):
        continue
    pinned = cells[-1]
    for part in re.split(r";\s*", pinned):
        m = re.match(r"(?:(tests/\S+|\S+\.(?:cpp|py|sh))|same)\s*(.*)", part)
        if not m:
            continue
        if m.group(1):
            f = m.group(1)
            path = root / f if f.startswith("tests/") else (by_name.get(f, [None])[0])
            last = path
        path = last
        names = re.findall(r"\"([^\"]+)\"", m.group(2) or "")
        if path is None or not path.exists():
            if names or m.group(1):
                print(f"reliability.md: no such test file '{m.group(1) or 'same'}' in row '{cells[0][:50]}'")
                bad += 1
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        cases = re.findall(r"TEST_CASE\(\"((?:[^\"\\]|\\.)*)\"", text)
        for n in names:
            stem = n.rstrip("…").rstrip(".").strip()
            checked += 1
            if not any(c.startswith(stem) for c in cases) and stem not in text:
                print(f"reliability.md: {path.relative_to(root)} has no test case \"{n}\" (row '{cells[0][:50]}')")
                bad += 1
print(f"reliability.md: {checked} test-case references checked, {bad} dangling")
sys.exit(1 if bad else 0)
