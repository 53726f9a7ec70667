"""A Chinese report names every preflight column in Chinese, the AMD and Ascend ones too;
only names of products and keys (ROCm, NCCL, vm.swappiness ...) stay as they are."""

from __future__ import annotations

from aibench.reports import i18n
from aibench.reports.sections.preflight import COLUMNS

NAMES = {"CUDA", "ROCm", "AMD VBIOS", "CANN (HCCL)", "NCCL", "vm.swappiness", "THP"}


def test_every_preflight_column_but_a_product_name_is_translated() -> None:
    zh = i18n.translations("zh")
    left = [c.label for c in COLUMNS if c.label not in NAMES and zh.gettext(c.label) == c.label]
    assert left == []
    for label in ("NPU driver", "NPUs", "NPU health", "amdgpu driver"):
        assert label in {c.label for c in COLUMNS}
