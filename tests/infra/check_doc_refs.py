#!/usr/bin/env python3
"""Docs that point only inside the repository (or to public URLs). Every text file of docs/, README.md, CHANGELOG.md,
libcore/, plugins/, tools/, python/, bench/ and examples/ (code comments are docs too: the API reference shows
them) is read, and these are failures:

* a path outside the repository: `/work/`, `../shared`, `shared/spec`, `reference-shim`;
* a reference to a design spec kept outside the repository: "spec <name>.md", "Spec: `<name>.md`", and any "§"
  section number (no document of the repository numbers its sections: name the doc or the paper);
* a Markdown link to a relative target that does not exist (resolved from the file's directory; #anchors dropped);
* a file name ending in .md that is no file of the repository (looked up from the file's directory, the
  repository root and docs/);
* a repository path (docs/…, bench/…, tests/…, tools/…, examples/…, libcore/…, plugins/…, python/…, cmake/…)
  that names nothing in the repository (placeholders such as <name>, *, {a,b} and build outputs are skipped).

usage: check_doc_refs.py REPO_ROOT        prints each failure as FILE:LINE: what; exit 1 when there is one
"""
import os
import re
import sys

SCANNED = ["docs", "README.md", "CHANGELOG.md", "libcore", "plugins", "tools", "python", "bench", "examples"]
TEXT = (".md", ".h", ".hpp", ".c", ".cpp", ".py", ".sh", ".build", ".txt", ".in", ".cmake", ".json", ".toml", ".map")
OUTSIDE = ["/work/", "../shared", "shared/spec", "reference-shim"]
SPEC_FILE = re.compile(r"\bspec:?\s*`?[\w-]+\.md", re.IGNORECASE)
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
MD_NAME = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]+\.md)\b")
REPO_PATH = re.compile(r"(?<![\w/.~-])((?:docs|bench|tests|tools|examples|libcore|plugins|python|cmake)/[\w./+-]*[\w+])")
# Paths that exist only in a build or an install, named as such in the docs.
GENERATED = {"caption.md"}  # written by `attnmech figure`
BUILT = ("plugins/.attnmech-build-tree", "tools/attnmech.1", "tools/completion/attnmech", "tools/attnmech")


def files(root):
    for top in SCANNED:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for d, dirs, names in os.walk(path):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for n in sorted(names):
                if n.endswith(TEXT):
                    yield os.path.relpath(os.path.join(d, n), root)


def repo_path_exists(root, target):
    """A file or directory; a generated file's template (X.in); a stem of sources (tools/report/svg → svg.cpp);
    a built executable or module in an existing directory (a name without extension, a .so)."""
    path = os.path.join(root, target.rstrip("/.,:;"))
    if os.path.exists(path) or os.path.exists(path + ".in"):
        return True
    parent, base = os.path.split(path)
    if not os.path.isdir(parent):
        return False
    return "." not in base or base.endswith(".so") or any(n.startswith(base + ".") for n in os.listdir(parent))


def exists(root, rel_dir, target):
    target = target.split("#", 1)[0].rstrip("/.,:;")
    if not target:
        return True
    return any(os.path.exists(os.path.normpath(os.path.join(root, base, target)))
               for base in (rel_dir, "", "docs"))


def problems(root, rel):
    rel_dir = os.path.dirname(rel)
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        for bad in OUTSIDE:
            if bad in line:
                yield no, f"a path outside the repository ({bad})"
        if "§" in line:
            yield no, "a section number (§) of a document outside the repository: name the doc or the paper"
        for m in SPEC_FILE.finditer(line):
            yield no, f"a spec file outside the repository ({m.group(0)!r}): cite the paper or a doc of the repository"
        if any(c in line for c in "│└├"):
            continue  # a tree of an install or build layout, not of the repository
        for m in MD_LINK.finditer(line if rel.endswith(".md") else ""):
            t = m.group(1)
            if not re.match(r"[a-z]+:|#|<", t) and not exists(root, rel_dir, t):
                yield no, f"a link to a missing file ({t})"
        for m in MD_NAME.finditer(line):
            t = m.group(1)
            if os.path.basename(t) in GENERATED:
                continue
            if "://" in line[max(0, m.start() - 200):m.start()] and not line[m.start() - 1:m.start()].isspace():
                continue  # part of a URL
            if not exists(root, rel_dir, t):
                yield no, f"no such file in the repository ({t})"
        for m in REPO_PATH.finditer(line):
            t = m.group(1)
            if any(c in line[m.end():m.end() + 1] for c in "<*{$") or t.startswith(BUILT) or "build" in t.split("/")[0]:
                continue
            if not repo_path_exists(root, t):
                yield no, f"no such path in the repository ({t})"


def main():
    root = sys.argv[1]
    failures = [f"{rel}:{no}: {what}" for rel in files(root) for no, what in problems(root, rel)]
    for f in failures:
        print(f)
    n = sum(1 for _ in files(root))
    print(f"{len(failures)} reference(s) outside the repository or to missing files in {n} files")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
