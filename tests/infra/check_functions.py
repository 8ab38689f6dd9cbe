#!/usr/bin/env python3
"""Function-length check: no function in libcore/, tools/, plugins/ or python/ is longer than 80 non-blank
lines, and tools/attnmech.cpp is at most 400 lines. Short functions that each do one named thing are the house
style (docs/design.md); 80 lines is about what a reader holds in view at once.

usage: check_functions.py SOURCE_ROOT [--max-function N] [--max-cli N] [--list] [FILE...]

C and C++: a function's length is the number of non-blank source lines from the line of its name to the line of
its closing brace (what `ctags -x --_xformat="%{line} %{end} %N" --fields=+ne` spans); lambdas and local
classes count toward the function that holds them. Comments, string and character literals and
preprocessor lines are blanked first (line numbers kept), then braces are matched: a brace at namespace,
class or extern "C" scope opens a function body when the text before it reads as a signature (a closing
parenthesis followed by qualifiers, a trailing return type or a constructor's initialiser list).
Python (read with `ast`): a function's length is the number of lines that are neither blank nor a comment from
its `def` to its last line; functions nested in a function count toward the one that holds them (as lambdas do
in C++), and a class's methods are each a function. FILE arguments (files or folders) replace the default
scope. Standard library only (CI has no ctags). Exit 0 when everything is within bounds, 1 otherwise.
"""
import ast
import os
import re
import sys

EXTENSIONS = ('.c', '.cc', '.cpp', '.cxx', '.h', '.hh', '.hpp', '.hxx')
PY_EXTENSIONS = ('.py',)
DEFAULT_SCOPE = ['libcore', 'tools', 'plugins', 'python']
CONTROL = {'if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'decltype', 'alignof', 'noexcept',
           'static_assert', 'defined'}
RAW = re.compile(r'R"([^()\\\s"]{0,16})\(')
QUALIFIER = re.compile(r'\s*(?:noexcept\s*\([^()]*\)|throw\s*\(\s*\)|\b(?:const|volatile|noexcept|override|final|mutable)\b|&&?)$')
CTOR_INIT = re.compile(r'\)\s*(?:noexcept\s*)?:(?!:)')
TRAILING_RETURN = re.compile(r'\)(?:\s*\b(?:const|noexcept|mutable)\b)*\s*->.*$', re.S)
NAME = re.compile(r'(operator\s*(?:\(\s*\)|\[\s*\]|[^\s\w()]+|new|delete|[A-Za-z_][\w\s:<>*&]*?)'
                  r'|~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*$')
CONTAINER = re.compile(r'^(?:(?!=).)*\b(?:namespace|class|struct|union)\b(?:(?!=).)*$|\bextern\s*"\s*"\s*$', re.S)


def blank(text):
    """Comments, string/char literals (contents) and preprocessor lines replaced by spaces; newlines kept."""
    out = list(text)
    n, i = len(text), 0
    line_start = True

    def wipe(a, b, keep_quotes=False):
        for k in range(a, b):
            if out[k] != '\n' and not (keep_quotes and k in (a, b - 1)):
                out[k] = ' '

    while i < n:
        c = text[i]
        if c == '\n':
            line_start = True
            i += 1
            continue
        if c in ' \t\r\f\v':
            i += 1
            continue
        if line_start and c == '#':  # a preprocessor line and its backslash continuations
            j = i
            while True:
                e = text.find('\n', j)
                if e < 0:
                    e = n
                    break
                if text[j:e].rstrip('\r').endswith('\\'):
                    j = e + 1
                    continue
                break
            wipe(i, e)
            i = e
            continue
        line_start = False
        ident_before = i > 0 and (text[i - 1].isalnum() or text[i - 1] == '_')
        raw = RAW.match(text, i) if c == 'R' and (not ident_before or text[i - 1] in 'uUL8') else None
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif raw:
            end = text.find(')' + raw.group(1) + '"', raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            wipe(i + 1, j, keep_quotes=True)
            i = j
        elif c == '"' or (c == "'" and not (ident_before and i + 1 < n and text[i + 1].isalnum())):  # 1'000: no
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            wipe(i, j, keep_quotes=True)
            i = j
        else:
            i += 1
    return ''.join(out)


def matching(text, i, open_c, close_c):
    """Index just after the bracket that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def signature(header):
    """(name, offset of the name in header) when the text before a '{' reads as a function signature."""
    lead = len(header) - len(header.lstrip())
    h = header.strip()
    if not h or h[-1] in '=,':
        return None
    m = CTOR_INIT.search(h)  # a constructor's initialiser list: cut at its ':'
    if m:
        h = h[:m.start() + 1]
    h = TRAILING_RETURN.sub(')', h)
    while True:
        shorter = QUALIFIER.sub('', h)
        if shorter == h:
            break
        h = shorter
    if not h.endswith(')'):
        return None
    depth, k = 0, len(h) - 1  # the '(' that opens the parameter list
    while k >= 0:
        depth += {')': 1, '(': -1}.get(h[k], 0)
        if depth == 0:
            break
        k -= 1
    before = h[:k].rstrip() if k > 0 else ''
    if before.endswith(')'):  # a function returning a function pointer: T (*name(params))(params)
        depth, j = 0, len(before) - 1
        while j >= 0:
            depth += {')': 1, '(': -1}.get(before[j], 0)
            if depth == 0:
                break
            j -= 1
        inner = before[j + 1:-1] if j >= 0 else ''
        sig = signature(inner) if inner.lstrip()[:1] in ('*', '&') else None
        return (sig[0], lead + j + 1 + sig[1]) if sig else None
    m = NAME.search(before)
    if not m or re.sub(r'\s+', '', m.group(1)).split('::')[-1] in CONTROL:
        return None
    return re.sub(r'\s+', '', m.group(1)), lead + m.start(1)


def functions(text):
    """[(name, first_line, last_line)] of every function definition in the blanked text."""
    found = []

    def line_of(pos):
        return text.count('\n', 0, pos) + 1

    def scan(begin, end):  # a container scope: the file, a namespace, a class, extern "C"
        i, head_start = begin, begin
        while i < end:
            c = text[i]
            if c in ';}':
                head_start = i + 1
                i += 1
            elif c == '(':
                i = matching(text, i, '(', ')')
            elif c == '{':
                header = text[head_start:i]
                tail = header.rstrip()
                if CTOR_INIT.search(header) and tail and (tail[-1].isalnum() or tail[-1] in '_>'):
                    i = matching(text, i, '{', '}')  # a member's brace initialiser: still the header
                    continue
                close = matching(text, i, '{', '}')
                sig = signature(header)
                if sig:
                    found.append((sig[0], line_of(head_start + sig[1]), line_of(close - 1)))
                elif CONTAINER.search(header):
                    scan(i + 1, close - 1)
                i = head_start = close
            else:
                i += 1

    scan(0, len(text))
    return found


def nonblank(lines, first, last):
    return sum(1 for ln in lines[first - 1:last] if ln.strip())


def py_functions(source, path):
    """[(name, first_line, last_line)] of every outermost Python function (methods included, nested ones not)."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child.lineno, child.end_lineno))
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + '.')
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=path), '')
    return found


def py_length(lines, first, last):
    """Lines that are neither blank nor a comment (a docstring counts: it is code a reader reads)."""
    return sum(1 for ln in lines[first - 1:last] if ln.strip() and not ln.strip().startswith('#'))


def sources(root, rels):
    for rel in rels:
        top = os.path.join(root, rel)
        if os.path.isfile(top):
            yield top
            continue
        for d, subdirs, files in os.walk(top):
            subdirs.sort()
            for f in sorted(files):
                if f.endswith(EXTENSIONS + PY_EXTENSIONS):
                    yield os.path.join(d, f)


def main(argv):
    args = argv[1:]
    max_fn, max_cli, listing, files = 80, 400, False, []
    root = None
    while args:
        a = args.pop(0)
        if a == '--max-function':
            max_fn = int(args.pop(0))
        elif a == '--max-cli':
            max_cli = int(args.pop(0))
        elif a == '--list':
            listing = True
        elif root is None:
            root = a
        else:
            files.append(a)
    if root is None:
        print(__doc__.strip().split('\n\n')[1])
        return 2
    failed = False
    scanned = nfun = 0
    for path in sources(root, files or DEFAULT_SCOPE):
        with open(path, encoding='utf-8', errors='replace') as fh:
            original = fh.read()
        lines = original.split('\n')
        scanned += 1
        if path.endswith(PY_EXTENSIONS):
            found = [(n, a, b, py_length(lines, a, b)) for n, a, b in py_functions(original, path)]
        else:
            found = [(n, a, b, nonblank(lines, a, b)) for n, a, b in functions(blank(original))]
        for name, first, last, count in found:
            nfun += 1
            rel = os.path.relpath(path, root)
            if listing:
                print(f'{first} {last} {count} {name} {rel}')
            if count > max_fn:
                print(f'FAIL {rel}:{first}: {name} has {count} non-blank lines (max {max_fn})')
                failed = True
    print(f'{scanned} files, {nfun} function definitions checked (max {max_fn} non-blank lines each)')
    cli = os.path.join(root, 'tools', 'attnmech.cpp')
    if not files and os.path.isfile(cli):
        with open(cli, encoding='utf-8', errors='replace') as fh:
            n_cli = fh.read().count('\n')
        print(f'tools/attnmech.cpp: {n_cli} lines (max {max_cli})')
        if n_cli > max_cli:
            print(f'FAIL tools/attnmech.cpp has {n_cli} lines (max {max_cli})')
            failed = True
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
