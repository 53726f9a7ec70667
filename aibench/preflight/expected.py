"""What the inventory says a node has, against what the preflight found there.

The inventory may declare per node ``gpus: {model, count}``, ``hcas: [{name, port,
rate_gbps}]`` and ``data_dirs``. :func:`check` returns one :class:`Verdict` per declared
item and node (PASS or FAIL; benchmark ``preflight``):

* ``inventory.gpu_count``: ``nvidia-smi.gpu_count`` equals ``gpus.count`` (an absent
  nvidia-smi where GPUs are declared is a FAIL, with the reason);
* ``inventory.hca_state``: the declared HCA port is Active (``ibstat.state``, else
  ``ibv_devinfo.state`` PORT_ACTIVE); a port that is not listed at all is a FAIL, and
  MISSING when neither tool could be read on the node (not installed: never a PASS);
* ``inventory.hca_rate``: the port's ``ibstat.rate`` is at least ``rate_gbps``;
* ``inventory.data_dir``: the data directory exists, i.e. ``mount.target`` is known for it.

The GPU model name is not compared: inventories use marketing names (H100-SXM5-80GB) and
nvidia-smi its own (NVIDIA H100 80GB HBM3); the spec's fact checks can match it.
A node that did not report the source at all (its step failed or was unreachable) gets
no verdict here; the failed step says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aibench.inventory import Inventory
from aibench.model import Fact, Outcome, Verdict

BENCHMARK = "preflight"


def _find(facts: list[Fact], source: str, name: str, **dims: object) -> list[Fact]:
    return [
        f
        for f in facts
        if f.source == source
        and f.name == name
        and all(f.dims.get(k) == v for k, v in dims.items())
    ]


def _verdict(
    check: str,
    node: str,
    ok: bool,
    expected: str,
    observed: str,
    reason: str = "",
    description: str = "",
) -> Verdict:
    return Verdict(
        check=check,
        outcome=Outcome.PASS if ok else Outcome.FAIL,
        subject=(node,),
        description=description,
        expected=expected,
        observed_text=observed,
        culprits=() if ok else (node,),
        reason="" if ok else reason,
        benchmark=BENCHMARK,
        origin="inventory",
    )


def _shown(f: Fact) -> str:
    return "absent" + (f" ({f.reason})" if f.reason else "") if f.value is None else str(f.value)


def check(inventory: Inventory, facts: Iterable[Fact]) -> list[Verdict]:
    facts = list(facts)
    by_node: dict[str, list[Fact]] = {}
    for f in facts:
        for n in f.nodes:
            by_node.setdefault(n, []).append(f)
    out: list[Verdict] = []
    for node in inventory.nodes:
        mine = by_node.get(node.name, [])
        out += _gpus(node.name, node.facts, mine)
        out += _hcas(node.name, node.facts, mine)
        out += _dirs(node.name, node.facts, mine)
    return out


def _gpus(node: str, declared: Mapping[str, Any], facts: list[Fact]) -> list[Verdict]:
    gpus = declared.get("gpus")
    if not isinstance(gpus, Mapping) or "count" not in gpus:
        return []
    found = _find(facts, "nvidia-smi", "gpu_count")
    if not found:
        return []
    want = int(gpus["count"])
    f = found[0]
    ok = f.value == want
    return [
        _verdict(
            "inventory.gpu_count",
            node,
            ok,
            f"{want} (inventory)",
            _shown(f),
            f"{node}: nvidia-smi reports {_shown(f)} GPUs, the inventory {want}",
            "GPUs per node, as the inventory declares them",
        )
    ]


def _hcas(node: str, declared: Mapping[str, Any], facts: list[Fact]) -> list[Verdict]:
    hcas = declared.get("hcas") or []
    have_ibstat = bool(_find(facts, "ibstat", "hca_count"))
    have_verbs = bool(_find(facts, "ibv_devinfo", "hca_count"))
    if not hcas or not (have_ibstat or have_verbs):
        return []
    out = []
    for h in hcas:
        name, port = str(h.get("name")), int(h.get("port", 1))
        where = f"{name} port {port}"
        state = [f for f in _find(facts, "ibstat", "state", hca=name, port=port) if f.value]
        verbs = [f for f in _find(facts, "ibv_devinfo", "state", hca=name, port=port) if f.value]
        counts = _find(facts, "ibstat", "hca_count") + _find(facts, "ibv_devinfo", "hca_count")
        readable = [f for f in counts if f.value is not None]
        if state:
            ok, seen = state[0].value == "Active", str(state[0].value)
        elif verbs:
            ok, seen = verbs[0].value == "PORT_ACTIVE", str(verbs[0].value)
        elif not readable:  # neither ibstat nor ibv_devinfo could be read: not verified
            why = "; ".join(sorted({f.reason for f in counts if f.reason})) or "no HCA tool"
            out.append(
                Verdict(
                    check="inventory.hca_state",
                    outcome=Outcome.MISSING,
                    subject=(node,),
                    description="declared HCA port is up",
                    expected=f"{where} Active",
                    observed_text=f"absent ({why})",
                    reason=f"{node}: {where} not verified: {why}",
                    benchmark=BENCHMARK,
                    origin="inventory",
                )
            )
            continue
        else:
            ok, seen = False, "not listed"
        out.append(
            _verdict(
                "inventory.hca_state",
                node,
                ok,
                f"{where} Active",
                seen,
                f"{node}: {where} is {seen}",
                "declared HCA port is up",
            )
        )
        rate_want = h.get("rate_gbps")
        if rate_want is None:
            continue
        rates = [
            f
            for f in _find(facts, "ibstat", "rate", hca=name, port=port)
            if isinstance(f.value, int | float)
        ]
        if not rates:
            if any(f.value is not None for f in _find(facts, "ibstat", "hca_count")):
                out.append(
                    _verdict(
                        "inventory.hca_rate",
                        node,
                        False,
                        f">= {rate_want:g} Gbit/s",
                        "not listed",
                        f"{node}: ibstat lists no rate for {where}",
                        "declared HCA port runs at its nominal rate",
                    )
                )
            continue
        got = float(rates[0].value)  # type: ignore[arg-type]
        out.append(
            _verdict(
                "inventory.hca_rate",
                node,
                got >= float(rate_want),
                f">= {rate_want:g} Gbit/s",
                f"{got:g} Gbit/s",
                f"{node}: {where} runs at {got:g} Gbit/s, declared {rate_want:g}",
                "declared HCA port runs at its nominal rate",
            )
        )
    return out


def _dirs(node: str, declared: Mapping[str, Any], facts: list[Fact]) -> list[Verdict]:
    dirs = declared.get("data_dirs") or []
    if isinstance(dirs, str):
        dirs = [dirs]
    out = []
    for d in dirs:
        found = _find(facts, "mount", "target", path=str(d))
        if not found:
            continue
        f = found[0]
        out.append(
            _verdict(
                "inventory.data_dir",
                node,
                f.value is not None,
                f"{d} mounted",
                _shown(f) if f.value is None else f"on {f.value}",
                f"{node}: data directory {d}: {_shown(f)}",
                "declared data directory exists",
            )
        )
    return out
