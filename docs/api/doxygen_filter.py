#!/usr/bin/env python3
"""Doxygen input filter for attnmech's public headers (docs/api/Doxyfile): the headers are commented in plain C
(`/* ... */` before a declaration, `/* ... */` after a member), so this turns those comments into documentation
comments as Doxygen reads them, without changing the installed headers:
  * the file's opening comment → `/** @file ... */`;
  * a comment whose next line is a declaration → `/** ... */` (a comment followed by a blank line, a closing
    brace or another comment is a section note: left as it is);
  * a comment at the end of a line of code → `/**< ... */` (one in the middle of a line, e.g. inside a parameter
    list, is left as it is);
and in the text of those comments the characters Doxygen would read as commands or HTML (backslash, @, <, >, &, #)
are escaped, except inside `code spans`; lines indented past ' * ' (the headers' tables and code examples) become
verbatim blocks, shown as laid out.
Usage: doxygen_filter.py HEADER (Doxygen's INPUT_FILTER): the filtered header on stdout."""
import re
import sys

COMMENT = re.compile(r"/\*(?!\*)(.*?)\*/", re.S)
SPECIAL = re.compile(r"([\\@<>&#])")


def escape_text(text):
    """Escape Doxygen's special characters outside `code spans`."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside backticks
        parts[i] = SPECIAL.sub(r"\\\1", parts[i])
    return "`".join(parts)


def escape_comment(body):
    """The comment's lines escaped; a run of lines indented past ' * ' (tables, code, aligned lists) is laid out by
    its author: it becomes a verbatim block, unescaped."""
    out, in_block = [], False
    for line in body.split("\n"):
        m = re.match(r"(\s*\*?)( *)(.*)$", line)
        lead, indent, rest = m.group(1), m.group(2), m.group(3)
        block = len(out) > 0 and lead.strip() == "*" and len(indent) >= 2 and rest != ""
        if block and not in_block:
            out.append("@verbatim")
        elif in_block and not block:
            out.append("@endverbatim")
        in_block = block
        # The ' * ' leaders go (Doxygen would keep them inside a verbatim block); the first line keeps its text.
        if not out and lead.strip() != "*":
            out.append(lead + indent + escape_text(rest))
        else:
            out.append(indent + rest if block else indent + escape_text(rest))
    if in_block:
        out.append("@endverbatim\n")
    return "\n".join(out)


def kind(src, m, first):
    """'file', 'before', 'after' or None (left as it is) for the comment matched by m."""
    line_start = src.rfind("\n", 0, m.start()) + 1
    line_end = src.find("\n", m.end())
    line_end = len(src) if line_end < 0 else line_end
    before, after = src[line_start:m.start()], src[m.end():line_end]
    if first and not before.strip():
        return "file"
    if before.strip():
        return "after" if not after.strip() else None
    if after.strip():
        return None
    nxt = src[line_end + 1:].split("\n", 1)[0].strip()
    if not nxt or nxt.startswith(("}", "/*", "//", "#ifdef __cplusplus", "#endif")):
        return None
    return "before"


def filter_header(src):
    out, pos, first = [], 0, True
    for m in COMMENT.finditer(src):
        k = kind(src, m, first)
        first = False
        out.append(src[pos:m.start()])
        body = escape_comment(m.group(1))
        if k == "file":
            out.append("/** @file\n" + body + "*/")
        elif k == "before":
            out.append("/**" + body + "*/")
        elif k == "after":
            out.append("/**<" + body + "*/")
        else:
            out.append(m.group(0))
        pos = m.end()
    out.append(src[pos:])
    return "".join(out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(filter_header(f.read()))
