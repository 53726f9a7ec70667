"""Preflight section: the per-node table of the facts that decide a handover, odd values marked.

Rows of :data:`COLUMNS` (driver, CUDA, GPU count and model, ECC mode and uncorrected
errors, remapped rows, Xid events, HCA count / port states / rates / firmware, kernel,
swappiness, governor, DCGM) plus one column per benchmark tool version found. A fact
reported once per GPU, HCA or port becomes one cell per node: counts are summed
(``sum``), states and rates are tallied (``Active ×8, Down ×1``), anything else lists its
distinct values. A cell that differs from the value most nodes have is prefixed ``≠`` and
highlighted (on a tie every value is marked: there is no majority); the fleet's value is
the first row. With up to 12 nodes the table is transposed (one column per node). Beyond
:data:`MAX_ROWS` nodes only the nodes with an odd value are listed. Absent facts are
listed with their reasons below; the full bill of materials is in the environment section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from aibench.model import Fact
from aibench.preflight import vendor
from aibench.reports.i18n import N_, _
from aibench.reports.sections import Section, SectionInput, SectionOutput, Table, measurement_table

MAX_ROWS = 300
TRANSPOSE = 12
ODD = "≠ "


@dataclass(frozen=True)
class Column:
    label: str  # English, marked with N_; shown translated
    source: str
    name: str
    how: str = "distinct"  # distinct | sum | tally
    dims: tuple[tuple[str, object], ...] = ()


COLUMNS: tuple[Column, ...] = (
    Column(N_("GPU driver"), "nvidia-smi", "driver_version"),
    Column("CUDA", "nvidia-smi", "cuda_version"),
    Column(N_("GPUs"), "nvidia-smi", "gpu_count"),
    Column(N_("GPU model"), "nvidia-smi", "product_name"),
    Column(N_("persistence"), "nvidia-smi", "persistence_mode", "tally"),
    Column(N_("ECC mode"), "nvidia-smi", "ecc_mode", "tally"),
    Column(
        N_("ECC uncorrected (aggregate)"),
        "nvidia-smi",
        "ecc_uncorrected_total",
        "sum",
        (("scope", "aggregate"),),
    ),
    Column(N_("remapped rows pending"), "nvidia-smi", "remapped_rows_pending", "tally"),
    Column(N_("remapped rows uncorrectable"), "nvidia-smi", "remapped_rows_uncorrectable", "sum"),
    Column(N_("retired pages pending"), "nvidia-smi", "retired_pages_pending", "tally"),
    Column(N_("clock events"), "nvidia-smi", "clocks_event_reasons", "tally"),
    Column(N_("Xid events"), "kernel-log", "xid_count", "sum"),
    Column(N_("Xid codes"), "kernel-log", "xid_codes"),
    Column(N_("DCGM diag"), "dcgmi", "overall"),
    Column(N_("HCAs"), "ibstat", "hca_count"),
    Column(N_("HCA port state"), "ibstat", "state", "tally"),
    Column(N_("HCA rate (Gbit/s)"), "ibstat", "rate", "tally"),
    Column(N_("HCA firmware"), "ibstat", "firmware_version"),
    Column(N_("kernel"), "kernel", "release"),
    Column("vm.swappiness", "sysctl", "vm.swappiness"),
    Column(N_("governor"), "cpu", "governor", "tally"),
    Column(N_("THP"), "thp", "enabled"),
    Column("NCCL", "nccl", "version"),
)
# AMD Instinct and Huawei Ascend, in their vendors' terms (xGMI is AMD's Infinity Fabric
# link between GPUs; the NPUs' scale-out RoCE ports are read with hccn_tool)
COLUMNS += (
    Column("ROCm", "amd-smi", "rocm_version"),
    Column(N_("amdgpu driver"), "amd-smi", "driver_version"),
    Column(N_("AMD GPUs"), "amd-smi", "gpu_count"),
    Column(N_("AMD GPU model"), "amd-smi", "product_name"),
    Column("AMD VBIOS", "amd-smi", "vbios_version"),
    Column(N_("AMD ECC uncorrectable"), "amd-smi", "ecc_uncorrectable_total", "sum"),
    Column(N_("AMD throttle status"), "amd-smi", "throttle_status", "tally"),
    Column(N_("AMD power cap (W)"), "amd-smi", "power_cap", "tally"),
    Column(N_("xGMI link type"), "amd-smi", "xgmi_link_type", "tally"),
    Column(N_("xGMI max bandwidth (Gbit/s)"), "amd-smi", "xgmi_max_bandwidth", "tally"),
    Column(N_("amdgpu driver (rocm-smi)"), "rocm-smi", "driver_version"),
    Column(N_("NPU driver"), "npu-smi", "driver_version"),
    Column(N_("NPUs"), "npu-smi", "npu_count"),
    Column(N_("NPU model"), "npu-smi", "product_name"),
    Column(N_("NPU health"), "npu-smi", "health", "tally"),
    Column(N_("NPU firmware"), "npu-smi", "firmware_version"),
    Column(N_("NPU HBM double-bit ECC"), "npu-smi", "hbm_double_bit_error_count", "sum"),
    Column("CANN (HCCL)", "ascend", "cann_version"),
    Column(N_("NPU RoCE link (hccn_tool)"), "hccn_tool", "link_status", "tally"),
)
VENDOR_SOURCES = vendor.SOURCES  # AMD Instinct and Huawei Ascend: shown only where found
TOOL_SOURCE = "tool-version"


def _num(v: object) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def cell(facts: Sequence[Fact], how: str) -> str:
    """One node's text for one column: 'absent' when every fact of it is absent."""
    present = [f.value for f in facts if f.value is not None]
    if not present:
        return _("absent")
    if how == "sum" and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in present
    ):
        return _num(sum(v for v in present if isinstance(v, int | float)))
    if how in ("tally", "sum"):
        counted = Counter(_num(v) for v in present)
        if len(counted) == 1 and len(present) == 1:
            return next(iter(counted))
        return ", ".join(f"{v} ×{n}" for v, n in sorted(counted.items(), key=lambda kv: -kv[1]))
    distinct = sorted({_num(v) for v in present})
    return ", ".join(distinct)


def _columns(facts: Sequence[Fact]) -> list[Column]:
    names = {(f.source, f.name) for f in facts}
    found = {(f.source, f.name) for f in facts if f.value is not None}
    cols = [
        c
        for c in COLUMNS
        if (c.source, c.name) in names
        and ((c.source, c.name) in found or c.source not in VENDOR_SOURCES)  # no such GPUs
    ]
    tools = sorted({f.name for f in facts if f.source == TOOL_SOURCE})
    cols += [Column(_("{tool} version").format(tool=t), TOOL_SOURCE, t) for t in tools]
    return cols


@dataclass(frozen=True)
class Grid:
    nodes: tuple[str, ...]
    columns: tuple[Column, ...]
    cells: dict[str, tuple[str, ...]]  # node -> one text per column
    majority: tuple[str, ...]  # per column: the fleet's value, or "(no majority)"
    odd: frozenset[tuple[str, int]]  # (node, column) that differ from the majority


def grid(facts: Sequence[Fact], nodes: Sequence[str]) -> Grid:
    cols = _columns(facts)
    per: dict[tuple[str, str, str], list[Fact]] = {}
    for f in facts:
        for n in f.nodes:
            per.setdefault((n, f.source, f.name), []).append(f)
    cells: dict[str, tuple[str, ...]] = {}
    for n in nodes:
        row = []
        for c in cols:
            got = per.get((n, c.source, c.name))
            if got is None:
                row.append("—")  # the node reported nothing for it
                continue
            wanted = [f for f in got if all(f.dims.get(k) == v for k, v in c.dims)]
            row.append(cell(wanted or got, c.how))
        cells[n] = tuple(row)
    majority = []
    odd: set[tuple[str, int]] = set()
    for i in range(len(cols)):
        counted = Counter(cells[n][i] for n in nodes)
        ranked = counted.most_common()
        if len(ranked) < 2:
            majority.append(ranked[0][0] if ranked else "")
            continue
        tie = ranked[0][1] == ranked[1][1]
        top = ranked[0][0]
        majority.append(_("(no majority)") if tie else top)
        odd |= {(n, i) for n in nodes if tie or cells[n][i] != top}
    return Grid(tuple(nodes), tuple(cols), cells, tuple(majority), frozenset(odd))


def preflight_table(facts: Sequence[Fact], nodes: Sequence[str]) -> Table | None:
    if not nodes:
        return None
    g = grid(facts, nodes)
    if not g.columns:
        return None
    odd_nodes = [n for n in nodes if any((n, i) in g.odd for i in range(len(g.columns)))]
    how = (
        _(
            "≠ marks a value that differs from the value most nodes have (highlighted); on a "
            "tie every value is marked; — the node reported nothing for it"
        )
        if len(nodes) > 1
        else _("one node: nothing to compare it with")
    )
    title = _("Per-node preflight facts ({nodes} nodes, {odd} with an odd value)").format(
        nodes=len(nodes), odd=len(odd_nodes)
    )
    if len(nodes) <= TRANSPOSE:
        return _fact_rows(g, title, how)
    return _node_rows(g, odd_nodes, title, how)


def _shown(g: Grid, n: str, i: int) -> str:
    return ODD + g.cells[n][i] if (n, i) in g.odd else g.cells[n][i]


def _fact_rows(g: Grid, title: str, how: str) -> Table:
    """A few nodes: one row per fact, one column per node (and the fleet's value)."""
    nodes = g.nodes
    compare = len(nodes) > 1
    header = (_("fact"), *nodes, *((_("most nodes"),) if compare else ()))
    rows = []
    flagged: set[tuple[int, int]] = set()
    for i, c in enumerate(g.columns):
        rows.append(
            (_(c.label), *(_shown(g, n, i) for n in nodes), *((g.majority[i],) if compare else ()))
        )
        flagged |= {(i, 1 + j) for j, n in enumerate(nodes) if (n, i) in g.odd}
    return Table(title, header, tuple(rows), how, frozenset(flagged))


def _node_rows(g: Grid, odd_nodes: list[str], title: str, how: str) -> Table:
    """Many nodes: the fleet's value first, then one row per node (beyond MAX_ROWS nodes,
    only those with an odd value)."""
    nodes = g.nodes
    listed = list(nodes) if len(nodes) <= MAX_ROWS else odd_nodes[:MAX_ROWS]
    rows = [(_("(most nodes)"), *g.majority)]
    flagged: set[tuple[int, int]] = set()
    for r, n in enumerate(listed, 1):
        rows.append((n, *(_shown(g, n, i) for i in range(len(g.columns)))))
        flagged |= {(r, 1 + i) for i in range(len(g.columns)) if (n, i) in g.odd}
    note = how
    if len(listed) < len(nodes):
        rest = len(nodes) - len(odd_nodes)
        note += _("; {n} nodes match the majority in every column and are not listed").format(
            n=rest
        )
        if len(odd_nodes) > len(listed):
            note += _("; {n} more nodes with odd values not shown").format(
                n=len(odd_nodes) - len(listed)
            )
    header = (_("node"), *(_(c.label) for c in g.columns))
    return Table(title, header, tuple(rows), note, frozenset(flagged))


def render(si: SectionInput) -> SectionOutput:
    facts = [f for s in si.steps for f in s.facts]
    nodes: list[str] = []
    for s in si.steps:
        for n in s.nodes:
            if n not in nodes:
                nodes.append(n)
    nodes.sort()
    here = {f.source for f in facts if f.value is not None}  # AMD/Ascend tools found
    absent = [f for f in facts if f.absent and (f.source not in VENDOR_SOURCES or f.source in here)]
    tables = []
    table = preflight_table(facts, nodes)
    if table is not None:
        tables.append(table)
    if absent:
        rows = tuple(
            (", ".join(f.nodes), f.source, f.name, f.reason or _("(absent)"))
            for f in absent[:MAX_ROWS]
        )
        tables.append(
            Table(
                _("Absent facts"),
                (_("node"), _("source"), _("fact"), _("reason")),
                rows,
                _("showing {shown} of {total}").format(shown=MAX_ROWS, total=len(absent))
                if len(absent) > MAX_ROWS
                else "",
            )
        )
    failed = [s for s in si.steps if not s.ok]
    notes = [
        _(
            "{facts} facts from {steps} steps on {nodes} nodes; {absent} absent. The whole "
            "bill of materials is in the environment section below."
        ).format(facts=len(facts), steps=len(si.steps), nodes=len(nodes), absent=len(absent))
    ]
    if failed:
        notes.append(
            _("✖ {n} preflight steps failed: ").format(n=len(failed))
            + "; ".join(f"{s.step_id}: {s.reason}" for s in failed[:5])
        )
    if si.measurements:
        tables.append(measurement_table(si.measurements))
    return SectionOutput(tables=tuple(tables), notes=tuple(notes))


SECTION = Section("preflight", N_("Preflight (node facts)"), render)
