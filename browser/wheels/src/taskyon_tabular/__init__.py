"""taskyon_tabular: small table helpers for browser Python tools.

The wheel Taskyon ships verified with its browser Python sandbox (issue 15):
pure Python, no dependencies.
"""

import csv
import io

__version__ = "1.0.0"


def parse_csv(text, delimiter=","):
    """Rows of a CSV text as dicts keyed by the header row."""
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


def column(rows, name):
    """The values of one column, in row order."""
    return [row[name] for row in rows]


def summarize(rows, name):
    """count, sum, min and max of a numeric column."""
    values = [float(v) for v in column(rows, name)]
    return {"count": len(values), "sum": sum(values), "min": min(values), "max": max(values)}
