#!/usr/bin/env python3
"""docs/cli.md against the CLI's own help, so that its synopsis and option lists cannot drift from the option table
(run, sweep, figure: tools/cli_options.cpp) and the fixed help texts (list, help, plot; tools/cli_help.cpp):

* the synopsis block after `<!-- synopsis -->` holds exactly the usage forms of every command's --help, in the
  main help's command order, then `attnmech --help | --version` (whitespace within a form is not compared);
* the block after `<!-- options: CMD -->` is exactly the `options:` section of `attnmech CMD --help`;
* every variable of the main help's `environment:` section is named in docs/cli.md.

usage: check_cli_md.py ATTNMECH_EXE DOCS_CLI_MD [--update]   (--update rewrites the generated blocks in place)
"""
import re
import subprocess
import sys

COMMANDS = ["list", "run", "help", "plot", "sweep", "figure"]
LAST_FORM = "attnmech --help | --version"


def help_text(exe, *args):
    return subprocess.run([exe, *args, "--help"], capture_output=True, text=True, check=True, timeout=60).stdout


def forms(lines):
    """Usage forms: a line starting with `attnmech ` or `mpirun ` starts one, other lines continue it; whitespace
    collapsed, trailing comments in parentheses kept."""
    out = []
    for line in lines:
        text = line.strip()
        if text.startswith("usage: "):
            text = text[7:]
        if not text:
            continue
        if text.startswith(("attnmech ", "mpirun ")) or not out:
            out.append(text)
        else:
            out[-1] += " " + text
    return [" ".join(f.split()) for f in out]


def usage_lines(text):
    lines = text.splitlines()
    end = lines.index("") if "" in lines else len(lines)
    return lines[:end]


def options_section(text):
    lines = text.splitlines()
    if "options:" not in lines:
        return []
    start = lines.index("options:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def synopsis(exe):
    """The synopsis block as written: each command's usage lines with `usage: ` dropped (its indent follows)."""
    out = []
    for c in COMMANDS:
        for line in usage_lines(help_text(exe, c)):
            out.append(line[7:] if line.startswith("usage: ") else line[7:] if line.startswith(" " * 7) else line)
    return out + [LAST_FORM]


def block_after(doc, marker):
    """(start, end) line indices of the fenced block's body right after `marker`, or None."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == marker:
            if i + 1 < len(lines) and lines[i + 1].startswith("```"):
                end = next((k for k in range(i + 2, len(lines)) if lines[k].startswith("```")), None)
                if end is not None:
                    return i + 2, end
    return None


def main():
    exe, path = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv[3:]
    doc = open(path, encoding="utf-8").read()
    wanted = {"<!-- synopsis -->": synopsis(exe)}
    for c in COMMANDS:
        wanted[f"<!-- options: {c} -->"] = options_section(help_text(exe, c))
    failures = []
    for marker, body in wanted.items():
        span = block_after(doc, marker)
        if span is None:
            failures.append(f"{marker}: missing (the marker line, then a ``` block)")
            continue
        lines = doc.splitlines()
        got = lines[span[0]:span[1]]
        same = forms(got) == forms(body) if marker == "<!-- synopsis -->" else got == body
        if not same:
            if update:
                doc = "\n".join(lines[:span[0]] + body + lines[span[1]:]) + "\n"
            else:
                failures.append(f"{marker}: differs from the CLI's help; expected:\n" + "\n".join(body))
    main_help = help_text(exe).splitlines()
    env = main_help[main_help.index("environment:") + 1:] if "environment:" in main_help else []
    names = [m.group(1) for m in (re.match(r"  ([A-Z][A-Z0-9_]+)", line) for line in env) if m]
    if not names:
        failures.append("the main help has no environment: section")
    failures += [f"{n}: in `attnmech --help`'s environment section, not in {path}" for n in names if n not in doc]
    if update:
        open(path, "w", encoding="utf-8").write(doc)
    for f in failures:
        print("FAIL: docs/cli.md " + f)
    if not failures:
        print(f"docs/cli.md: synopsis and the options of {', '.join(COMMANDS)} as --help shows them; "
              f"environment: {', '.join(names)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
