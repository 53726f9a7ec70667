"""hccl_test section: HCCL algorithm bandwidth vs message size, in Ascend's terms.

The plots and tables are those of the NCCL-tests section (:mod:`.nccl`), which draws
``algbw`` when no ``busbw`` exists: hccl_test prints only the algorithm bandwidth (data
size / time). The notes name the links in Huawei's terms (HCCS inside a node, each NPU's
RoCE port between nodes) and say why there is no bus bandwidth.
"""

from __future__ import annotations

import dataclasses

from aibench.reports.sections import Section, SectionInput, SectionOutput
from aibench.reports.sections._vendor_terms import link_note
from aibench.reports.sections.nccl import render as render_collectives


def render(si: SectionInput) -> SectionOutput:
    out = render_collectives(si)
    tables = tuple(
        dataclasses.replace(t, caption="Other HCCL measurements")
        if t.caption == "Other NCCL measurements"
        else t
        for t in out.tables
    )
    notes = (
        link_note("hccl-tests"),
        "hccl_test reports the algorithm bandwidth (data size / time) only; NCCL-tests' "
        "bus bandwidth has no hccl_test counterpart, so the values are algbw.",
        *out.notes,
    )
    return SectionOutput(plots=out.plots, tables=tables, notes=notes)


SECTION = Section(
    "hccl-tests",
    "HCCL tests (Ascend collective bandwidth: HCCS inside a node, RoCE between)",
    render,
)
