"""The results table of one nccl-tests run: header mapping, rows, the footer check.

Private helper of :mod:`aibench.parsers.nccl_tests` (its docstring is the contract).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from aibench.errors import ParseError
from aibench.model import DimsLayout, FrozenDims, Measurement, Scalar

TOOL = "nccl-tests"

PLACEMENTS = ("out_of_place", "in_place")

# The collectives of NCCL-tests (each a binary ``<name>_perf``), and those only RCCL-tests
# (ROCm's fork) has: the one list the parsers and the runners of both take them from.
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "sendrecv",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "hypercube",
)
RCCL_ONLY = ("alltoallv",)

# column name -> (metric, unit); the metric columns repeat once per placement
_METRICS = {
    "time": ("time", "us"),
    "cputime": ("time", "us"),
    "algbw": ("algbw", "GB/s"),
    "busbw": ("busbw", "GB/s"),
    "#wrong": ("wrong", "count"),
}
_JSON_METRICS = (
    ("time", "time", "us"),
    ("cpu_time", "time", "us"),
    ("alg_bw", "algbw", "GB/s"),
    ("bus_bw", "busbw", "GB/s"),
    ("nwrong", "wrong", "count"),
)

# nccl-tests before 2.13 (DeltaMaxValue): largest deviation accepted per element type,
# multiplied by (nranks - 1). Integer types: any deviation is an error.
_DELTA_MAX = {"half": 1e-2, "bfloat16": 1e-2, "float": 1e-5, "double": 1e-12}


def number(text: str) -> float | None:
    """The finite number in ``text``; None for N/A, nan, inf. ParseError-free by design."""
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def half_ulp(text: str) -> float:
    """Half a unit of the last printed digit of a row value (``%.2f`` ... ``%.1e``)."""
    if "e" not in text and "E" not in text and text.isprintable() and " " not in text:
        # the common "%.2f" token: no exponent, nothing for strip() to remove
        dot = text.find(".")
        return 0.5 * 10.0 ** -(len(text) - dot - 1 if dot >= 0 else 0)
    mantissa, _, exp = text.strip().lower().partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** ((int(exp) if exp else 0) - decimals)


def half_ulp_g(value: float) -> float:
    """Half a unit of the last digit of ``value`` printed with ``%g`` (6 significant)."""
    if value == 0:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - 5)


def check_average(values: list[tuple[float, float]], avg: float, avg_ulp: float, line: int) -> None:
    """Raise ParseError when ``avg`` is not the mean of ``values`` within rounding.

    ``values`` are (printed value, half unit of its last digit); nccl-tests averages the
    unrounded numbers, so the tolerance is the mean rounding of the rows plus the
    rounding of the footer itself.
    """
    if not values:
        return
    mean = sum(v for v, _ in values) / len(values)
    tol = sum(u for _, u in values) / len(values) + avg_ulp + 1e-9 * max(1.0, abs(avg))
    if abs(mean - avg) > tol:
        raise ParseError(
            TOOL,
            f"'Avg bus bandwidth' {avg:g} is not the mean busbw {mean:.6g} of the "
            f"{len(values)} parsed values (tolerance {tol:.2g}): rows are missing or misread",
            line,
        )


# What a results column feeds: a row key (int or str dim) or a metric of a placement
_KEY_INT = {"size": "size_bytes", "count": "count", "root": "root"}
_KEY_STR = {"type": "dtype", "redop": "redop", "op": "redop"}


@dataclass(frozen=True)
class _Plan:
    """How to read a row of one width: computed once per header, used for every row."""

    keys: tuple[tuple[int, str, str, bool], ...]  # (index, column, dim, is an integer)
    values: tuple[tuple[int, str, int, str, str], ...]  # (index, column, place, metric, unit)
    key_dims: tuple[str, ...]  # the distinct dims of ``keys``
    layout: DimsLayout  # key_dims (+ op) + placement
    str_keys: tuple[tuple[int, str], ...]  # (index, dim) of the keys read as text
    int_keys: tuple[tuple[int, str, str], ...]  # (index, column, dim), in column order


def _plan(names: list[str], place: list[int], op: str | None) -> _Plan:
    keys: list[tuple[int, str, str, bool]] = []
    values: list[tuple[int, str, int, str, str]] = []
    for i, name in enumerate(names):
        if name in _KEY_INT:
            keys.append((i, name, _KEY_INT[name], True))
        elif name in _KEY_STR:
            keys.append((i, name, _KEY_STR[name], False))
    for i, (name, p) in enumerate(zip(names, place, strict=True)):
        if p < 0:
            continue
        if name == "error":
            values.append((i, name, p, "", ""))  # checked, not emitted
        elif name in _METRICS:
            values.append((i, name, p, *_METRICS[name]))
        # other columns (per-iteration i_min ..., timestamp) are not read
    key_dims = tuple(dict.fromkeys(dim for _, _, dim, _ in keys))
    layout = DimsLayout((*key_dims, "op", "placement") if op else (*key_dims, "placement"))
    str_keys = tuple((i, dim) for i, _, dim, is_int in keys if not is_int)
    int_keys = tuple((i, name, dim) for i, name, dim, is_int in keys if is_int)
    return _Plan(tuple(keys), tuple(values), key_dims, layout, str_keys, int_keys)


# (header names, op) -> its row plans by the number of fields; read only once built
_PLANS: dict[tuple[tuple[str, ...], str | None], dict[int, _Plan]] = {}


def _plans_for(names: tuple[str, ...], place: tuple[int, ...], op: str | None) -> dict[int, _Plan]:
    """The row plans of one results header (memoized: a log of many runs repeats it)."""
    found = _PLANS.get((names, op))
    if found is not None:
        return found
    plans = {len(names): _plan(list(names), list(place), op)}
    if 1 in place:
        # trace replay: no out-of-place body, only in-place columns
        kept = [i for i, p in enumerate(place) if p != 0]
        plans[len(kept)] = _plan([names[i] for i in kept], [place[i] for i in kept], op)
    if "redop" in names and "root" in names and len(names) - 1 not in plans:
        # hypercube_perf prints an empty redop ("%6s" of ""): one field fewer; the
        # root column after it must still read as an integer
        kept = [i for i, n in enumerate(names) if n != "redop"]
        plans[len(kept)] = _plan([names[i] for i in kept], [place[i] for i in kept], op)
    if len(_PLANS) > 256:
        _PLANS.clear()
    _PLANS[(names, op)] = plans
    return plans


def _row_key(plan: _Plan, tokens: list[str], no: int) -> dict[str, Scalar]:
    """The dims that tell a row apart (size, count, dtype, redop, root), by column."""
    # text and integer dims never share a name, so reading the text ones first gives
    # the same dict; the first integer column that fails is the one reported
    key: dict[str, Scalar] = {dim: tokens[i] for i, dim in plan.str_keys}
    for i, name, dim in plan.int_keys:
        try:
            key[dim] = int(tokens[i])
        except ValueError:
            raise ParseError(
                TOOL, f"column {name!r}: {tokens[i]!r} is not an integer", no
            ) from None
    return key


@dataclass
class Section:
    """One run of one binary: from its ``# nThread`` line to its footer."""

    op: str | None
    start: int
    ranks: int = 0
    run: int = 0  # the number of its results table in the log (1 ...)
    columns: list[str] | None = None
    header_line: int = 0
    records: list[Measurement] = field(default_factory=list)
    busbw: list[tuple[float, float]] = field(default_factory=list)
    # (line, reason) of each failed data check of this run: its rows are still read (the
    # run goes on and prints its footer); the caller reports them as the run's failure
    failures: list[tuple[int, str]] = field(default_factory=list)
    # the #wrong figures above 0 (elements the data check found wrong) and their rows
    wrong_elements: float = 0.0
    wrong_rows: int = 0
    rows: int = 0  # the rows read
    _place: list[int] = field(default_factory=list)  # per column: -1 row key, 0/1 placement
    _plans: dict[int, _Plan] = field(default_factory=dict)  # by the number of fields
    _timestamp: int = -1  # index of the two-field timestamp column, -1 when none

    def set_header(self, names: list[str], line: int) -> None:
        place, group = [], -1
        for name in names:
            if name in ("time", "cputime"):
                group += 1
            place.append(group)
        if group not in (0, 1) or "size" not in names:
            raise ParseError(TOOL, f"unexpected results header: {' '.join(names)}", line)
        self.columns, self.header_line, self._place = names, line, place
        self._timestamp = names.index("timestamp") if "timestamp" in names else -1
        self._plans = _plans_for(tuple(names), tuple(place), self.op)

    @property
    def min_fields(self) -> int:
        """The fewest fields a row of this table has (a shorter one was cut mid-line)."""
        return min(self._plans)

    def _wrong(self, value: float, placement: str, tok: object, key: dict[str, Scalar]) -> str:
        """Count a #wrong figure above 0; the failure's words for it."""
        self.wrong_elements += value
        return f"{placement} #wrong {tok} at size {key.get('size_bytes')} B (data check failed)"

    def _dims(self, key: dict[str, Scalar], placement: str) -> FrozenDims:
        dims = dict(key)
        if self.op:
            dims["op"] = self.op
        dims["placement"] = placement
        return FrozenDims(dims)

    def _row_plan(self, line: str, no: int, tokens: list[str]) -> _Plan:
        """The plan for a row of ``tokens``, its two-field timestamp joined into one."""
        assert self.columns is not None
        ncols = len(self.columns)
        ts = self._timestamp
        if ts >= 0 and len(tokens) == ncols + 1:
            tokens[ts : ts + 2] = [tokens[ts] + " " + tokens[ts + 1]]
        plan = self._plans.get(len(tokens))
        if plan is None:
            raise ParseError(
                TOOL,
                f"row has {len(tokens)} fields, the header has {ncols}: {line.strip()}",
                no,
            )
        return plan

    def add_row(self, line: str, no: int, tokens: list[str] | None = None) -> None:
        """Read one table row (``tokens``: ``line.split()`` when the caller has it)."""
        if tokens is None:
            tokens = line.split()
        plan = self._row_plan(line, no, tokens)
        key = _row_key(plan, tokens, no)
        head = [key[d] for d in plan.key_dims]
        if self.op:
            head.append(self.op)
        # one FrozenDims per placement, shared by the metrics of that placement
        dims = plan.layout.make_each(head, PLACEMENTS)
        records = self.records
        add, add_busbw = records.append, self.busbw.append
        wrong_before = self.wrong_elements
        for i, name, p, metric, unit in plan.values:
            tok = tokens[i]
            if not metric:
                self._check_error(tok, key, PLACEMENTS[p], line, no)
                continue
            try:
                value = float(tok)
            except ValueError:
                value = math.nan
            if value - value != 0.0:  # N/A, nan, inf or not a number
                if tok == "N/A" or tok.lower().lstrip("-") in ("nan", "inf"):
                    continue
                raise ParseError(
                    TOOL, f"column {name!r} ({PLACEMENTS[p]}): {tok!r} is not a number", no
                )
            if metric == "wrong":
                if value > 0:
                    why = self._wrong(value, PLACEMENTS[p], tok, key)
                    self.failures.append((no, f"{why}: {line.strip()}"))
            elif metric == "busbw":
                add_busbw((value, half_ulp(tok)))
            add(Measurement(TOOL, metric, value, unit, dims[p]))
        self.rows += 1
        if self.wrong_elements > wrong_before:
            self.wrong_rows += 1

    def _check_error(
        self, tok: str, key: dict[str, Scalar], placement: str, line: str, no: int
    ) -> None:
        if tok == "N/A":
            return
        value = number(tok)
        if value is None:
            raise ParseError(TOOL, f"column 'error' ({placement}): {tok!r} is not a number", no)
        limit = _DELTA_MAX.get(str(key.get("dtype")), 0.0) * max(self.ranks - 1, 1)
        if value > limit:
            self.failures.append(
                (
                    no,
                    f"{placement} error {tok} above the tolerance {limit:g} "
                    f"at size {key.get('size_bytes')} B: {line.strip()}",
                )
            )

    def add_json_row(self, row: dict[str, Any], index: int, line: int) -> None:
        key: dict[str, Scalar] = {}
        for src, dst in (("size", "size_bytes"), ("count", "count"), ("root", "root")):
            v = row.get(src)
            try:
                key[dst] = int(str(v).strip())
            except ValueError:
                raise ParseError(
                    TOOL, f"results[{index}].{src}: {v!r} is not an integer", line
                ) from None
        for src, dst in (("type", "dtype"), ("redop", "redop")):
            if isinstance(row.get(src), str):
                key[dst] = row[src]
        wrong_before = self.wrong_elements
        for placement in PLACEMENTS:
            body = row.get(placement)
            if body is None:
                continue  # out_of_place is null in trace replay
            if not isinstance(body, dict):
                raise ParseError(TOOL, f"results[{index}].{placement} is not an object", line)
            dims: FrozenDims | None = None  # shared by the metrics of this placement
            for src, metric, unit in _JSON_METRICS:
                if src not in body or body[src] is None:
                    continue
                raw = body[src]
                if isinstance(raw, bool) or not isinstance(raw, int | float | str):
                    raise ParseError(
                        TOOL, f"results[{index}].{placement}.{src}: {raw!r} is not a number", line
                    )
                value = number(str(raw))
                if value is None:
                    if str(raw).lower().lstrip("-") in ("nan", "inf"):
                        continue
                    raise ParseError(
                        TOOL, f"results[{index}].{placement}.{src}: {raw!r} is not a number", line
                    )
                if metric == "wrong" and value > 0:
                    self.failures.append((line, self._wrong(value, placement, raw, key)))
                if metric == "busbw":
                    self.busbw.append((value, 5e-7 if isinstance(raw, str) else 0.0))
                if dims is None:
                    dims = self._dims(key, placement)
                self.records.append(Measurement(TOOL, metric, value, unit, dims))
        self.rows += 1
        if self.wrong_elements > wrong_before:
            self.wrong_rows += 1
