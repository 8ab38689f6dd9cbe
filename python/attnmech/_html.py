"""Small HTML tables for the notebook reprs (`_repr_html_`) of Results and Solution; every text escaped. Internal."""
import html
import numbers


def cell(value):
    """One value as escaped text: numbers to 6 significant digits, the rest by str()."""
    if isinstance(value, bool):
        text = str(value)
    elif isinstance(value, numbers.Integral):
        text = str(int(value))
    elif isinstance(value, numbers.Real):
        text = f"{float(value):.6g}"
    else:
        text = "" if value is None else str(value)
    return html.escape(text)


def key_value_table(title, pairs):
    """A two-column table (name, value) under a bold title."""
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{cell(v)}</td></tr>" for k, v in pairs)
    return f"<div><b>{html.escape(title)}</b><table>{rows}</table></div>"


def grid_table(columns, rows, more=0):
    """A table with a header row; `rows` are sequences of values in column order; `more` rows left out."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in r) + "</tr>" for r in rows)
    tail = f"<tr><td colspan='{len(columns)}'>… {more} more</td></tr>" if more else ""
    return f"<table><tr>{head}</tr>{body}{tail}</table>"
