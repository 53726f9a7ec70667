"""The AMD Instinct and Huawei Ascend commands of the preflight: argv, parser, key facts.

Every command runs through one of two fixed shell scripts (no inventory or suite value
is part of a script; the tool directories and NPU ids arrive as positional arguments):

* :data:`RUN` runs one tool after adding the vendors' install directories to ``PATH``
  (``/opt/rocm/bin`` for amd-smi and rocm-smi, ``/usr/local/Ascend/driver/tools`` for
  hccn_tool; npu-smi installs into ``/usr/local/sbin``), after the directories of the
  option ``tool_path`` and the node's ``tool_dirs: {amd-smi: DIR, npu-smi: DIR ...}``
  of the inventory, which come first. A tool that is not found exits 127 with
  ``<tool>: command not found``, which the runner records as the fact that it is absent.
  ``rocm-smi`` is the fallback of older ROCm: with ``rocm_smi: fallback`` (the default)
  it is not run where amd-smi is installed, and its key facts are absent with that
  reason.
* :data:`EACH` runs the per-NPU queries of one tool for every NPU id given, printing each
  query's command line before its output (the layout of Huawei's fault-collection guide,
  read by the ``npu-smi-detail`` and ``hccn-tool`` parsers).

=================  ======================================================  ====================
kind               command (as run on the node)                            parser
=================  ======================================================  ====================
amd-version        ``amd-smi version``                                     amd-smi-version
amd-static         ``amd-smi static --json``                               amd-smi-static
amd-metric         ``amd-smi metric --json``                               amd-smi-metric
amd-firmware       ``amd-smi firmware``                                    amd-smi-firmware
amd-xgmi           ``amd-smi xgmi``                                        amd-smi-xgmi
rocm-smi           ``rocm-smi -a`` (fallback: only where amd-smi is not)   rocm-smi
npu-info           ``npu-smi info``                                        npu-smi-info
npu-detail         ``npu-smi info -i N -t board|health|ecc`` per NPU       npu-smi-detail
hccn               ``hccn_tool -i N -link|-net_health|-ip|-speed|          hccn-tool
                   -optical|-link_stat -g`` per NPU
ascend-versions    the driver / firmware version.info and CANN             ascend-version-info
                   ascend_toolkit_install.info files under ``ascend_root``
=================  ======================================================  ====================

``amd-smi firmware`` and ``xgmi`` are read as text: the captured outputs these parsers
are tested on are text (amd-smi offers JSON for them too). The NPU ids are the option
``npu_ids``, else ``0 .. gpus.count - 1`` of the inventory, else 0-7 (an 8-NPU Atlas
800 A2 server).
"""

from __future__ import annotations

from aibench.inventory import Node
from aibench.parsers.ascend_versions import SCRIPT as ASCEND_VERSIONS

VENDOR_DIRS = "/opt/rocm/bin:/usr/local/Ascend/driver/tools:/usr/local/sbin:/usr/local/bin"

RUN = (
    'd=$1; shift; PATH="${d:+$d:}$PATH:' + VENDOR_DIRS + '"; export PATH\n'
    'if [ "$1" = --unless ]; then\n'
    '  if command -v "$2" >/dev/null 2>&1; then echo "@@ skipped: $2 is installed"; exit 0; fi\n'
    "  shift 2\n"
    "fi\n"
    'command -v "$1" >/dev/null 2>&1 || { echo "$1: command not found" >&2; exit 127; }\n'
    'exec "$@"\n'
)

EACH = (
    'd=$1; tool=$2; shift 2; PATH="${d:+$d:}$PATH:' + VENDOR_DIRS + '"; export PATH\n'
    'command -v "$tool" >/dev/null 2>&1 || { echo "$tool: command not found" >&2; exit 127; }\n'
    'for i in "$@"; do\n'
    '  case "$tool" in\n'
    "    npu-smi)\n"
    "      for t in board health ecc; do\n"
    '        if [ "$t" = health ]; then\n'
    '          echo "npu-smi info -i $i -c 0 -t $t"; npu-smi info -i "$i" -c 0 -t "$t" 2>&1\n'
    "        else\n"
    '          echo "npu-smi info -i $i -t $t"; npu-smi info -i "$i" -t "$t" 2>&1\n'
    "        fi\n"
    "        echo\n"
    "      done ;;\n"
    "    hccn_tool)\n"
    "      for q in link net_health ip speed optical link_stat; do\n"
    '        echo "hccn_tool -i $i -$q -g"\n'
    '        hccn_tool -i "$i" -"$q" -g 2>&1\n'
    "        echo\n"
    "      done ;;\n"
    "  esac\n"
    "done\n"
)

# kind -> the facts that stand for it when its command is absent (see runners.preflight)
KEY_FACTS: dict[str, tuple[tuple[str, str], ...]] = {
    "amd-version": (("amd-smi", "rocm_version"),),
    "amd-static": (("amd-smi", "gpu_count"), ("amd-smi", "driver_version")),
    "amd-metric": (("amd-smi", "ecc_uncorrectable_total"), ("amd-smi", "throttle_status")),
    "amd-firmware": (("amd-smi", "firmware_version"),),
    "amd-xgmi": (("amd-smi", "xgmi_gpu_count"),),
    "rocm-smi": (("rocm-smi", "gpu_count"), ("rocm-smi", "driver_version")),
    "npu-info": (("npu-smi", "npu_count"), ("npu-smi", "driver_version")),
    "npu-detail": (("npu-smi", "firmware_version"), ("npu-smi", "health_status")),
    "hccn": (("hccn_tool", "link_status"),),
    "ascend-versions": (("ascend", "cann_version"), ("ascend", "driver_version")),
}
# Sources whose rows the preflight table leaves out when no node has the tool.
SOURCES = frozenset({"amd-smi", "rocm-smi", "npu-smi", "hccn_tool", "ascend"})


TOOLS = ("amd-smi", "rocm-smi", "npu-smi", "hccn_tool")


def search_dirs(node: Node, tool_path: list[str]) -> list[str]:
    """``tool_path``, then the node's ``tool_dirs`` entries of the vendor tools."""
    dirs = list(tool_path)
    per_tool = node.facts.get("tool_dirs")
    if isinstance(per_tool, dict):
        for tool in TOOLS:
            d = per_tool.get(tool)
            if isinstance(d, str) and d.startswith("/") and ":" not in d and d not in dirs:
                dirs.append(d)
    return dirs


def npu_ids(node: Node, explicit: list[int] | None) -> list[int]:
    if explicit is not None:
        return list(explicit)
    gpus = node.facts.get("gpus") or {}
    count = int(gpus.get("count", 0)) if isinstance(gpus, dict) else 0
    return list(range(count or 8))


def commands(
    node: Node,
    *,
    amd: bool,
    ascend: bool,
    rocm_smi: str,
    tool_path: list[str],
    npus: list[int] | None,
    ascend_root: str,
    timeout: float,
) -> list[tuple[str, tuple[str, ...], str, float]]:
    """(kind, argv, parser, timeout) of the vendor commands for one node."""
    d = ":".join(search_dirs(node, tool_path))

    def run(*argv: str) -> tuple[str, ...]:
        return ("sh", "-c", RUN, "sh", d, *argv)

    t = timeout
    out: list[tuple[str, tuple[str, ...], str, float]] = []
    if amd:
        out += [
            ("amd-version", run("amd-smi", "version"), "amd-smi-version", t),
            ("amd-static", run("amd-smi", "static", "--json"), "amd-smi-static", t),
            ("amd-metric", run("amd-smi", "metric", "--json"), "amd-smi-metric", t),
            ("amd-firmware", run("amd-smi", "firmware"), "amd-smi-firmware", t),
            ("amd-xgmi", run("amd-smi", "xgmi"), "amd-smi-xgmi", t),
        ]
        if rocm_smi != "never":
            unless = ("--unless", "amd-smi") if rocm_smi == "fallback" else ()
            out.append(("rocm-smi", run(*unless, "rocm-smi", "-a"), "rocm-smi", t))
    if ascend:
        ids = [str(i) for i in npu_ids(node, npus)]
        each = ("sh", "-c", EACH, "sh", d)
        out += [
            ("npu-info", run("npu-smi", "info"), "npu-smi-info", t),
            ("npu-detail", (*each, "npu-smi", *ids), "npu-smi-detail", t + 5 * len(ids)),
            ("hccn", (*each, "hccn_tool", *ids), "hccn-tool", t + 5 * len(ids)),
            (
                "ascend-versions",
                ("sh", "-c", ASCEND_VERSIONS, "sh", ascend_root),
                "ascend-version-info",
                t,
            ),
        ]
    return out


def program(argv: tuple[str, ...]) -> str:
    """The tool a vendor command runs (for "X: not installed"), else argv[0]."""
    if len(argv) > 5 and argv[:2] == ("sh", "-c") and argv[2] in (RUN, EACH):
        rest = argv[5:]
        if argv[2] == RUN and rest[0] == "--unless":
            rest = rest[2:]
        return rest[0]
    return argv[0]
