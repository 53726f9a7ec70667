"""IOR's JSON summary (``ior ... -O summaryFormat=JSON``), for the IOR parser.

``tests[].Results`` holds one object per operation and iteration (a flat list in 4.x, a
list of lists, one per iteration, in 3.3); ``summary[]`` one object per test and operation.
"""

from __future__ import annotations

from typing import Any

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Record
from aibench.parsers._util import json_document

TOOL = "ior"
_RESULT_KEYS = {
    "bwMiB": ("bw", "MiB/s", ()),
    "iops": ("iops", "ops/s", ()),
    "latency": ("latency", "s", ()),
    "openTime": ("time", "s", (("phase", "open"),)),
    "wrRdTime": ("time", "s", (("phase", "wrrd"),)),
    "closeTime": ("time", "s", (("phase", "close"),)),
    "totalTime": ("time", "s", (("phase", "total"),)),
}
_SUMMARY_KEYS = {
    "bwMaxMIB": ("bw", "MiB/s", "max"),
    "bwMinMIB": ("bw", "MiB/s", "min"),
    "bwMeanMIB": ("bw", "MiB/s", "mean"),
    "bwStdMIB": ("bw", "MiB/s", "stdev"),
    "OPsMax": ("iops", "ops/s", "max"),
    "OPsMin": ("iops", "ops/s", "min"),
    "OPsMean": ("iops", "ops/s", "mean"),
    "OPsSD": ("iops", "ops/s", "stdev"),
    "MeanTime": ("time", "s", "mean"),
}


def is_ior_json(text: str) -> bool:
    return '"Command line"' in text and '"tests"' in text and text.lstrip().startswith("{")


def parse_ior_json(text: str) -> list[Record]:
    doc, _line = json_document(TOOL, text)
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise ParseError(TOOL, "JSON without a 'tests' list")
    tests = doc["tests"]
    out: list[Record] = []
    for test in tests:
        out += _test_results(test, many=len(tests) > 1)
    for row in doc.get("summary") or []:
        out += _summary(row, many=len(tests) > 1)
    if not out:
        raise ParseError(TOOL, "JSON with no 'Results' and no 'summary' entry")
    return out


def _number(obj: dict[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(TOOL, f"{key} is not a number: {value!r}")
    return float(value)


def _test_results(test: dict[str, Any], many: bool) -> list[Measurement]:
    options = test.get("Options") or {}
    base: dict[str, str | int] = {
        "api": str(options.get("api", "")),
        "access": str(options.get("access", "")),
        "tasks": int(_number(options, "tasks")),
    }
    if many:
        base["test"] = int(_number(test, "TestID"))
    results = test.get("Results") or []
    flat = [r for rep in results for r in (rep if isinstance(rep, list) else [rep])]
    iteration: dict[str, int] = {}
    out = []
    for res in flat:
        op = str(res.get("access", ""))
        if op == "remove":  # 3.3 lists the removal of the test file, a time only
            continue
        if op not in ("write", "read"):
            raise ParseError(TOOL, f"a result whose access is {op!r}")
        dims = dict(base, op=op, iteration=iteration.setdefault(op, 0))
        iteration[op] += 1
        dims["block_bytes"] = round(_number(res, "blockKiB") * 1024)
        dims["xfer_bytes"] = round(_number(res, "xferKiB") * 1024)
        for key, (metric, unit, extra) in _RESULT_KEYS.items():
            if key in res:
                fd = FrozenDims({**dims, **dict(extra)})
                out.append(Measurement(TOOL, metric, _number(res, key), unit, fd))
    return out


def _summary(row: dict[str, Any], many: bool) -> list[Measurement]:
    dims: dict[str, str | int] = {
        "op": str(row.get("operation", "")),
        "api": str(row.get("API", "")),
        "tasks": int(_number(row, "numTasks")),
        "block_bytes": int(_number(row, "blockSize")),
        "xfer_bytes": int(_number(row, "transferSize")),
        "access": "file-per-process" if row.get("filePerProc") else "single-shared-file",
    }
    if many:
        dims["test"] = int(_number(row, "TestID"))
    out = []
    for key, (metric, unit, stat) in _SUMMARY_KEYS.items():
        if key in row:
            fd = FrozenDims({**dims, "stat": stat})
            out.append(Measurement(TOOL, metric, _number(row, key), unit, fd))
    return out
