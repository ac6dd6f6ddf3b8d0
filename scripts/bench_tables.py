"""bench_tables.py - reads what the benchmark scripts print (imported, not run).

The scripts under scripts/bench_*.sh print markdown tables between comment lines ("# ...") and
free text ("Ping-pong, one-way latency ...", "Target ..."). This module turns that output
back into data for scripts/bench_report.py:

    parse(text) -> [Table]   every table, with the nearest free-text line above it as caption
    number(cell) -> float or None          "3.14" -> 3.14; "n/a", "skipped", "" -> None
    size_bytes(cell) -> int or None        "8", "8 B", "64 KiB", "1 MiB" -> bytes
    Table.column(name) -> [cell], Table.find(pred) -> the first header matching pred
    notes(text) -> [line]   the lines that are neither table rows nor blank
"""
import re
from collections import namedtuple

_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
_SIZE = re.compile(r"^([0-9]+)\s*(B|KiB|MiB|GiB)?$")
_SCALE = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def number(cell):
    """A table cell as a float, or None when it is not a plain number."""
    cell = cell.strip()
    return float(cell) if _NUMBER.match(cell) else None


def size_bytes(cell):
    """A size cell ("8", "8 B", "1 KiB", "4 MiB") in bytes, or None."""
    m = _SIZE.match(cell.strip())
    return int(m.group(1)) * _SCALE[m.group(2)] if m else None


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class Table(namedtuple("Table", "caption header rows lines")):
    """caption: str ("" if none); header: [str]; rows: [[str]]; lines: the table's own text."""

    def index(self, name):
        return self.header.index(name)

    def column(self, name):
        i = self.index(name)
        return [row[i] if i < len(row) else "" for row in self.rows]

    def find(self, pred):
        """The first header cell for which pred(cell) is true, or None."""
        return next((h for h in self.header if pred(h)), None)


def parse(text):
    """All markdown tables of text, in order."""
    tables, caption, block = [], "", []
    lines = text.splitlines() + [""]
    for line in lines:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            if len(block) >= 2 and set(block[1].replace("|", "").strip()) <= set("-: "):
                rows = [_cells(b) for b in block[2:]]
                tables.append(Table(caption, _cells(block[0]), rows, list(block)))
            block, caption = [], ""
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            caption = stripped.rstrip(":")
    return tables


def notes(text):
    """The output's lines outside its tables (comments, targets, spreads), blank lines dropped."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("|")]
