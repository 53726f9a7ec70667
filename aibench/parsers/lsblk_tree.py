"""The system disk: which whole disk holds the root file system, from ``lsblk`` as a tree.

Command: ``lsblk -J -b -o NAME,TYPE,SIZE,TRAN,ROTA,MOUNTPOINT`` (no ``-d``: partitions,
LVM volumes, dm-crypt and md devices are children of their disks). Tested on util-linux
2.38.1 (Debian 12); ``mountpoints`` (a list, util-linux 2.37 and later, when asked for
``MOUNTPOINTS``) is read as well as ``mountpoint``.

A top-level device of type ``disk`` is a system disk when ``/`` is mounted on it or on
anything below it (a partition, an LVM volume on a partition, an md mirror: a mirrored
root gives two system disks). Emits, source ``system_disk``: ``count`` (system disks
found), and per system disk (dims ``device``): ``size`` (B, the whole disk, as lsblk
-b prints it), ``transport`` (``nvme``, ``sata``, ``sas`` ...; absent when lsblk reports
none, as for virtio disks), ``rotational`` (bool).

No block device holding ``/`` (a container whose root is an overlay, a diskless node on
NFS): ``count`` 0 and ``size`` absent with that reason, so that a spec asking for the
system disk's size fails as MISSING, never passes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aibench.errors import ParseError
from aibench.model import Fact, FrozenDims
from aibench.parsers import Parser

SOURCE = "system_disk"
_DIGITS = re.compile(r"^[0-9]+$")


def _mounts(dev: dict[str, Any]) -> list[str]:
    got: list[str] = []
    one = dev.get("mountpoint")
    if isinstance(one, str):
        got.append(one)
    many = dev.get("mountpoints")
    if isinstance(many, list):
        got += [m for m in many if isinstance(m, str)]
    return got


def _holds_root(dev: dict[str, Any]) -> bool:
    if "/" in _mounts(dev):
        return True
    children = dev.get("children")
    return isinstance(children, list) and any(
        isinstance(c, dict) and _holds_root(c) for c in children
    )


def _size(raw: object, name: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and _DIGITS.match(raw.strip()):
        return int(raw)
    raise ParseError("lsblk", f"{name}: SIZE is not a byte count: {raw!r} (use lsblk -b)")


def parse(text: str) -> list[Fact]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError("lsblk", f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    devices = doc.get("blockdevices") if isinstance(doc, dict) else None
    if not isinstance(devices, list):
        raise ParseError("lsblk", "no 'blockdevices' list in the JSON")
    system = [
        d for d in devices if isinstance(d, dict) and d.get("type") == "disk" and _holds_root(d)
    ]
    out = [Fact(SOURCE, "count", len(system), "count")]
    if not system:
        why = "no block device holds / (an overlay or network root file system?)"
        return [*out, Fact(SOURCE, "size", None, "B", reason=why)]
    for d in system:
        name = str(d.get("name", "?"))
        dims = FrozenDims({"device": name})
        size = _size(d.get("size"), name)
        tran = d.get("tran")
        rota = d.get("rota")
        if isinstance(rota, str):  # util-linux before 2.33 prints "0" / "1"
            rota = rota.strip() == "1"
        out += [
            Fact(SOURCE, "size", size, "B", dims, reason="" if size is not None else "no SIZE"),
            Fact(
                SOURCE,
                "transport",
                tran.strip() if isinstance(tran, str) and tran.strip() else None,
                None,
                dims,
                reason="" if isinstance(tran, str) and tran.strip() else "TRAN not reported",
            ),
            Fact(
                SOURCE,
                "rotational",
                rota if isinstance(rota, bool) else None,
                None,
                dims,
                reason="" if isinstance(rota, bool) else "ROTA not reported",
            ),
        ]
    return out


PARSER = Parser(
    "lsblk-tree",
    parse,
    "the system disk (the disk holding /) from lsblk -J -b as a tree",
    emits="facts",
)
