"""What the inventory says a node has, against what the preflight found there.

The inventory may declare per node ``gpus: {model, count}``, ``hcas: [{name, port,
rate_gbps}]`` and ``data_dirs``. :func:`check` returns one :class:`Verdict` per declared
item and node (PASS or FAIL; benchmark ``preflight``):

Which fact answers which declaration is declared by the tools, not here: the preflight's
traits (``Traits.declares``) name, per declaration, the facts of every tool that can
answer it (the GPU count of each vendor's GPU or NPU tool, the port state of each HCA
tool ...); the first tool that could be read on the node answers.

* ``inventory.gpu_count``: the node's GPU (or NPU) count equals ``gpus.count`` (no GPU
  tool readable where GPUs are declared is a FAIL, with each tool's reason);
* ``inventory.hca_state``: the declared HCA port is up (its tool's ``active`` state); a
  port that is not listed at all is a FAIL, and MISSING when no HCA tool could be read on
  the node (not installed: never a PASS);
* ``inventory.hca_rate``: the port's rate is at least ``rate_gbps``;
* ``inventory.data_dir``: the data directory exists, i.e. its mount target is known.

The GPU model name is not compared: inventories use marketing names (H100-SXM5-80GB) and
the tools their own (NVIDIA H100 80GB HBM3); the spec's fact checks can match it.
A node that did not report the source at all (its step failed or was unreachable) gets
no verdict here; the failed step says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aibench.inventory import Inventory
from aibench.model import Fact, Outcome, Verdict
from aibench.traits import Declares

BENCHMARK = "preflight"


def _declared(declares: Iterable[Declares], what: str) -> tuple[Declares, ...]:
    return tuple(d for d in declares if d.what == what)


def _find(facts: list[Fact], source: str, name: str, **dims: object) -> list[Fact]:
    return [
        f
        for f in facts
        if f.source == source
        and f.name == name
        and all(f.dims.get(k) == v for k, v in dims.items())
    ]


def _answers(
    facts: list[Fact], ds: tuple[Declares, ...], what: str, **dims: object
) -> list[tuple[Declares, Fact]]:
    """The facts that answer ``what``, in the order the tools declare them."""
    return [(d, f) for d in _declared(ds, what) for f in _find(facts, d.source, d.name, **dims)]


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


def check(
    inventory: Inventory, facts: Iterable[Fact], declares: Iterable[Declares]
) -> list[Verdict]:
    """The inventory's declarations against ``facts``; ``declares``: which tool's fact
    answers which declaration (the preflight's ``Traits.declares``)."""
    ds = tuple(declares)
    facts = list(facts)
    by_node: dict[str, list[Fact]] = {}
    for f in facts:
        for n in f.nodes:
            by_node.setdefault(n, []).append(f)
    out: list[Verdict] = []
    for node in inventory.nodes:
        mine = by_node.get(node.name, [])
        out += _gpus(node.name, node.facts, mine, ds)
        out += _hcas(node.name, node.facts, mine, ds)
        out += _dirs(node.name, node.facts, mine, ds)
    return out


def _gpus(
    node: str, declared: Mapping[str, Any], facts: list[Fact], ds: tuple[Declares, ...]
) -> list[Verdict]:
    gpus = declared.get("gpus")
    if not isinstance(gpus, Mapping) or "count" not in gpus:
        return []
    found = _answers(facts, ds, "gpu_count")
    if not found:
        return []
    want = int(gpus["count"])
    readable = [(d, f) for d, f in found if f.value is not None]
    d, f = (readable or found)[0]
    shown = _shown(f) if readable else "; ".join(f"{d.source} {_shown(f)}" for d, f in found)
    return [
        _verdict(
            "inventory.gpu_count",
            node,
            f.value == want,
            f"{want} (inventory)",
            shown,
            f"{node}: {d.source} reports {shown} GPUs, the inventory {want}"
            if readable
            else f"{node}: no GPU tool could be read ({shown}); the inventory declares {want}",
            "GPUs per node, as the inventory declares them",
        )
    ]


def _hcas(
    node: str, declared: Mapping[str, Any], facts: list[Fact], ds: tuple[Declares, ...]
) -> list[Verdict]:
    hcas = declared.get("hcas") or []
    counts = [f for _, f in _answers(facts, ds, "hca_count")]
    if not hcas or not counts:
        return []
    out = []
    for h in hcas:
        name, port = str(h.get("name")), int(h.get("port", 1))
        state = _hca_state(node, name, port, facts, ds, counts)
        out.append(state)
        rate_want = h.get("rate_gbps")
        if state.outcome is Outcome.MISSING or rate_want is None:
            continue
        out += _hca_rate(node, name, port, rate_want, facts, ds, counts)
    return out


def _hca_state(
    node: str, name: str, port: int, facts: list[Fact], ds: tuple[Declares, ...], counts: list[Fact]
) -> Verdict:
    """Whether the declared port is up; not verified (MISSING) when no HCA tool could be
    read at all, failed when the tools were read but do not list the port."""
    where = f"{name} port {port}"
    state = [(d, f) for d, f in _answers(facts, ds, "hca_state", hca=name, port=port) if f.value]
    readable = [f for f in counts if f.value is not None]
    if state:
        ok, seen = state[0][1].value == state[0][0].active, str(state[0][1].value)
    elif not readable:  # no HCA tool could be read: not verified
        why = "; ".join(sorted({f.reason for f in counts if f.reason})) or "no HCA tool"
        return Verdict(
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
    else:
        ok, seen = False, "not listed"
    return _verdict(
        "inventory.hca_state",
        node,
        ok,
        f"{where} Active",
        seen,
        f"{node}: {where} is {seen}",
        "declared HCA port is up",
    )


def _hca_rate(
    node: str,
    name: str,
    port: int,
    rate_want: Any,
    facts: list[Fact],
    ds: tuple[Declares, ...],
    counts: list[Fact],
) -> list[Verdict]:
    """Whether the declared port runs at its declared rate; nothing when no tool that
    reports rates could be read, failed when one was read but lists no rate for the port."""
    where = f"{name} port {port}"
    rates = [
        (d, f)
        for d, f in _answers(facts, ds, "hca_rate", hca=name, port=port)
        if isinstance(f.value, int | float)
    ]
    rate_tools = {d.source for d in _declared(ds, "hca_rate")}
    if not rates:
        if any(f.value is not None and f.source in rate_tools for f in counts):
            return [
                _verdict(
                    "inventory.hca_rate",
                    node,
                    False,
                    f">= {rate_want:g} Gbit/s",
                    "not listed",
                    f"{node}: {', '.join(sorted(rate_tools))} lists no rate for {where}",
                    "declared HCA port runs at its nominal rate",
                )
            ]
        return []
    got = float(rates[0][1].value)  # type: ignore[arg-type]
    return [
        _verdict(
            "inventory.hca_rate",
            node,
            got >= float(rate_want),
            f">= {rate_want:g} Gbit/s",
            f"{got:g} Gbit/s",
            f"{node}: {where} runs at {got:g} Gbit/s, declared {rate_want:g}",
            "declared HCA port runs at its nominal rate",
        )
    ]


def _dirs(
    node: str, declared: Mapping[str, Any], facts: list[Fact], ds: tuple[Declares, ...]
) -> list[Verdict]:
    dirs = declared.get("data_dirs") or []
    if isinstance(dirs, str):
        dirs = [dirs]
    out = []
    for d in dirs:
        found = _answers(facts, ds, "data_dir", path=str(d))
        if not found:
            continue
        f = found[0][1]
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
