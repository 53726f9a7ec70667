"""``aibench parse TOOL FILE...``: print the normalized records of a tool's output.

Any registered parser (:data:`aibench.parsers.PARSERS`) can be used; ``auto`` (as TOOL or
with ``--tool auto``) asks each parser's ``detect`` and says on stderr which one it chose.
``-`` reads standard input.

Output (stdout): an aligned plain-text table (default), ``--format json`` (one object
with a ``files`` list: per file its parser, its records, and its error if any; records
measured before a ToolFailure are included with ``"partial": true``) or ``--format csv``
(one row per record, one column per dimension). The tool's own warnings (Notes) follow
the table as ``note: ...`` lines, are records of kind ``Note`` in JSON and rows with the
metric ``note`` (the tool's words as the value) in CSV.

Exit codes: 0 when every file parsed; 1 when a file's output could not be read
(ParseError) or reports a failure of the tool (ToolFailure), each printed on stderr as
one line naming the file, the line and the reason; 2 for an unknown tool (the message
lists the valid ones), an unreadable file or an undetectable format.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError

DESCRIPTION = """\
Parse the saved output of a benchmark tool (fio, iperf3, iperf2, nccl-tests, ...) and
print the normalized records aibench would store: metric, value, unit and dimensions.
"""

EPILOG = """\
examples:
  aibench parse fio results.json
  aibench parse iperf3 client.json --format json
  aibench parse auto some-output.txt            # detect the tool from the content
  iperf3 -c host -J | aibench parse iperf3 -    # read standard input
  aibench parse --tool auto a.json b.txt --format csv > records.csv
"""

FORMATS = ("table", "json", "csv")


@dataclass
class FileResult:
    file: str
    parser: str
    records: list[Any] = field(default_factory=list)
    partial: bool = False
    error: dict[str, Any] | None = None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = "aibench parse [--tool NAME] [--format {table,json,csv}] TOOL FILE..."
    p.add_argument(
        "args",
        nargs="+",
        metavar="TOOL FILE...",
        help="the parser name (or 'auto') then one or more files; '-' is standard input",
    )
    p.add_argument(
        "--tool",
        metavar="NAME",
        help="the parser name or 'auto'; then every positional argument is a file",
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="output format")


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    return data.decode("utf-8", errors="replace")


def _choose(tool: str, path: str, text: str) -> Any:
    from aibench import parsers

    if tool != "auto":
        return parsers.get(tool)
    found = parsers.detect(text)
    if not found:
        raise UserError(
            f"{path}: no parser recognizes this output",
            hint=f"name the tool; valid tools: {', '.join(parsers.PARSERS.names())}",
        )
    if len(found) > 1:
        raise UserError(
            f"{path}: several parsers recognize this output: {', '.join(found)}",
            hint="name the tool instead of 'auto'",
        )
    print(f"aibench parse: {path}: detected tool {found[0]}", file=sys.stderr)
    return parsers.get(found[0])


def _parse_one(tool: str, path: str) -> FileResult:
    from aibench.errors import OutputError, ToolFailure

    text = _read(path)
    parser = _choose(tool, path, text)
    result = FileResult(file=path, parser=parser.name)
    try:
        result.records = list(parser.parse(text))
    except OutputError as exc:
        result.error = {"type": type(exc).__name__, "line": exc.line, "reason": exc.reason}
        if isinstance(exc, ToolFailure):
            result.records = list(exc.partial)
            result.partial = True
    return result


def _name(rec: Any) -> str:
    return str(getattr(rec, "metric", None) or getattr(rec, "name", ""))


def _dims_text(rec: Any) -> str:
    return " ".join(f"{k}={v}" for k, v in rec.dims.items())


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    return "" if value is None else str(value)


def _is_note(rec: Any) -> bool:
    from aibench.model import Note

    return isinstance(rec, Note)


def _note_lines(results: list[FileResult]) -> str:
    many = len(results) > 1
    out = []
    for r in results:
        for rec in r.records:
            if _is_note(rec):
                where = f" line {rec.line}" if rec.line is not None else ""
                out.append(
                    f"{r.file + ': ' if many else ''}{rec.kind} ({rec.tool}{where}): {rec.text}"
                )
    return "".join(line + "\n" for line in out)


def _table(results: list[FileResult]) -> str:
    return _measurements_table(results) + _note_lines(results)


def _measurements_table(results: list[FileResult]) -> str:
    many = len(results) > 1
    head = (["file"] if many else []) + ["tool", "metric", "value", "unit", "dims"]
    rows: list[list[str]] = []
    for r in results:
        for rec in r.records:
            if _is_note(rec):
                continue
            row = [r.file] if many else []
            row += [
                r.parser + (" (partial)" if r.partial else ""),
                _name(rec),
                _value_text(rec.value),
                rec.unit or "",
                _dims_text(rec),
            ]
            rows.append(row)
    if not rows:
        return "(no records)\n"
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=False)]
    right = {head.index("value")}
    lines = []
    for row in [head, *rows]:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _json(results: list[FileResult]) -> str:
    import json

    files = []
    for r in results:
        recs = []
        for rec in r.records:
            d = rec.to_dict()
            d["kind"] = type(rec).__name__
            if r.partial:
                d["partial"] = True
            recs.append(d)
        files.append({"file": r.file, "parser": r.parser, "records": recs, "error": r.error})
    return json.dumps({"files": files}, indent=1) + "\n"


def _csv(results: list[FileResult]) -> str:
    import csv
    import io

    dim_keys = sorted(
        {k for r in results for rec in r.records if not _is_note(rec) for k in rec.dims}
    )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["file", "parser", "kind", "metric", "value", "unit", "partial", *dim_keys])
    for r in results:
        for rec in r.records:
            if _is_note(rec):
                row = [r.file, r.parser, "Note", "note", rec.text, "", "true" if r.partial else ""]
                w.writerow(row + [""] * len(dim_keys))
                continue
            value = rec.value
            w.writerow(
                [
                    r.file,
                    r.parser,
                    type(rec).__name__,
                    _name(rec),
                    repr(value) if isinstance(value, float) else value,
                    rec.unit or "",
                    "true" if r.partial else "",
                    *[rec.dims.get(k, "") for k in dim_keys],
                ]
            )
    return buf.getvalue()


def run(args: argparse.Namespace) -> int:
    positional: list[str] = list(args.args)
    if args.tool:
        tool, files = args.tool, positional
    else:
        tool, files = positional[0], positional[1:]
    if not files:
        raise UserError("no FILE given", hint="aibench parse TOOL FILE... ('-' reads stdin)")
    if tool != "auto":
        from aibench import parsers

        parsers.get(tool)  # an unknown tool is a UserError listing the valid ones
    results = [_parse_one(tool, path) for path in files]
    render = {"table": _table, "json": _json, "csv": _csv}[args.format]
    sys.stdout.write(render(results))
    failed = False
    for r in results:
        if r.error:
            failed = True
            where = f" line {r.error['line']}" if r.error["line"] is not None else ""
            print(
                f"aibench parse: {r.file}{where}: {r.error['type']}: {r.error['reason']}",
                file=sys.stderr,
            )
    return EXIT_CHECKS_FAILED if failed else EXIT_OK


COMMAND = Command(
    name="parse",
    help="print the normalized records of a saved tool output",
    add_arguments=add_arguments,
    run=run,
    description=DESCRIPTION,
    epilog=EPILOG,
    order=40,
)
