#!/usr/bin/env python3
"""Counts a plugin source's ceremony: its non-blank, non-comment lines outside the science fences
(a comment line "science: begin" ... "science: end"). usage: ceremony.py FILE [MAX] — prints the count
and exits 1 when it is over MAX, 2 when the fences are missing."""
import re
import sys


def ceremony(text):
    # Comments out (strings kept: a "//" inside a literal is not a comment), line structure kept.
    code = re.sub(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/',
                  lambda m: m.group(0) if m.group(0).startswith('"') else re.sub(r'[^\n]', ' ', m.group(0)),
                  text, flags=re.S)
    count, inside, fences = 0, False, 0
    for raw, line in zip(text.split('\n'), code.split('\n')):
        if re.search(r'science:\s*begin', raw):
            inside, fences = True, fences + 1
        elif re.search(r'science:\s*end', raw):
            inside = False
        elif not inside and line.strip():
            count += 1
    return count, fences


if __name__ == '__main__':
    n, fences = ceremony(open(sys.argv[1], encoding='utf-8').read())
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
    print(f'{sys.argv[1]}: ceremony {n} lines' + (f' (max {limit})' if limit is not None else ''))
    sys.exit(2 if fences == 0 else 1 if limit is not None and n > limit else 0)
