"""sweep.csv on disk for scripts/sweep.py: reading it (a torn last line dropped), replacing it at
once, rewriting it record by record, appending whole lines, and resuming one written before
cnnbench reported more result columns."""
import csv
import io
import os
import re
import sys

if __package__:
    from .sweep_file import rel
else:
    from sweep_file import rel


def read_csv(path):
    """(header, rows) of an existing sweep.csv; a torn last line (a kill mid-write) is dropped."""
    with open(path, newline="") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        cut = text.rfind("\n") + 1
        print(f"sweep.py: {rel(path)}: dropping an incomplete last line", file=sys.stderr)
        text = text[:cut]
        write_atomically(path, text)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    rows = [dict(zip(header, r)) for r in reader if r] if header else []
    return header, rows


def write_atomically(path, text):
    """Replaces the file with text (str or bytes) at once: a kill leaves the old file or the new."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def rewrite_csv(path, change):
    """Rewrites a CSV file record by record: change(dict of the record) returns it, changed or
    not, or None to drop it. Records left as they were keep their exact text (a cnnbench
    results.csv stays in its own style); the file is replaced only when something changed."""
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        lines = re.findall(r"[^\n]*\n|[^\n]+$", f.read())
    consumed = []  # the lines of the record csv.reader is reading

    def feed():
        for line in lines:
            consumed.append(line)
            yield line
    reader = csv.reader(feed())
    header = next(reader, None)
    if not header:
        return
    out, changed = ["".join(consumed)], False
    consumed.clear()
    for record in reader:
        text = "".join(consumed)
        consumed.clear()
        row = dict(zip(header, record))
        new = change(dict(row))
        if new != row:
            changed = True
            if new is None:
                continue
            record = [new.get(c, v) for c, v in zip(header, record)] + record[len(header):]
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\r\n" if text.endswith("\r\n") else "\n").writerow(record)
            text = buf.getvalue()
        out.append(text)
    if changed:
        write_atomically(path, "".join(out))


def add_result_columns(path, old_header, header, rows, dry_run, result_columns):
    """A sweep.csv written before cnnbench reported more result columns: where the new header is
    the old one with result columns added (the grid's columns the same, in the same order), its
    rows are rewritten under the new header, the added cells empty (not measured then), so that
    the sweep resumes. Returns the columns added; [] where the difference is anything else."""
    added = [c for c in header if c not in old_header]
    if not added or any(c not in result_columns for c in added) or \
            [c for c in header if c in old_header] != old_header:
        return []
    if not dry_run:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(c, "") for c in header])
        write_atomically(path, buf.getvalue())
    return added


def append_line(path, values):
    """Appends one complete CSV line with a single write, then fsyncs: a kill leaves whole rows."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, buf.getvalue().encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read_csv_readonly(path):
    """read_csv without repairing anything (for --dry-run)."""
    with open(path, newline="") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    return header, ([dict(zip(header, r)) for r in reader if r] if header else [])
