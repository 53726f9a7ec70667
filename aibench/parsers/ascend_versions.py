"""Ascend software versions: the driver's ``version.info`` and CANN's install info files.

Huawei's installers leave ``key=value`` files behind: ``/usr/local/Ascend/driver/
version.info`` (``Version=24.1.rc2.2``, ``ascendhal_version=...``,
``compatible_version_fw=[7.0.0,7.2.99]``), ``/usr/local/Ascend/firmware/version.info``
(``Version=...``) and ``/usr/local/Ascend/ascend-toolkit/latest/<arch>-linux/
ascend_toolkit_install.info`` (``package_name=Ascend-cann-toolkit``, ``version=8.0.0``,
``innerversion=...``, ``arch=aarch64``). HCCL ships inside the CANN toolkit, so the CANN
version is the HCCL version.

Input: one such file as it is, or the output of the preflight's fixed script
(:data:`SCRIPT`, given the install root, ``/usr/local/Ascend`` unless the preflight option
``ascend_root`` says otherwise), which prints ``@@ file PATH`` before each file it finds
and ``@@ missing PATH`` for each it does not. Which file a block is comes from its path, or, for a
bare file, from its keys (``package_name=Ascend-cann-toolkit``; ``ascendhal_version``).

Facts, source ``"ascend"``: ``driver_version``, ``driver_compatible_firmware`` (the
``compatible_version_fw`` range) from the driver file; ``firmware_version`` from the
firmware file; ``cann_version``, ``cann_innerversion``, ``cann_arch`` from the toolkit
file. A missing file makes its facts absent with the path in the reason. Tested on the
driver file of a 910B3 server (24.1.rc2.2) and the toolkit files of CANN 8.0.0 and
8.3.RC2 hosts; the framing of the script is tested on those files inside it.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact
from aibench.parsers import Parser

SOURCE = "ascend"
FILES = (
    "driver/version.info",
    "firmware/version.info",
    "ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
    "ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info",
)
DEFAULT_ROOT = "/usr/local/Ascend"
# The fixed script the preflight runs: ``sh -c SCRIPT sh ROOT`` (the install root, default
# /usr/local/Ascend, is its one argument; no value is part of the script).
SCRIPT = (
    "for f in " + " ".join(FILES) + "; do\n"
    '  p="$1/$f"\n'
    '  if [ -r "$p" ]; then echo "@@ file $p"; cat "$p"; echo; else echo "@@ missing $p"; fi\n'
    "done\n"
)
_FRAME = re.compile(r"^@@ (file|missing) (\S+)\s*$")
# kind -> [(key in the file, fact name)]
_KEYS = {
    "driver": [
        ("Version", "driver_version"),
        ("compatible_version_fw", "driver_compatible_firmware"),
    ],
    "firmware": [("Version", "firmware_version")],
    "cann": [
        ("version", "cann_version"),
        ("innerversion", "cann_innerversion"),
        ("arch", "cann_arch"),
    ],
}


def _kind_of_path(path: str) -> str | None:
    if "/driver/" in path:
        return "driver"
    if "/firmware/" in path:
        return "firmware"
    if "ascend_toolkit_install.info" in path:
        return "cann"
    return None


def _kind_of_content(values: dict[str, str]) -> str | None:
    if values.get("package_name", "").lower().endswith("cann-toolkit"):
        return "cann"
    if "ascendhal_version" in values or "compatible_version_fw" in values:
        return "driver"
    return None


def _values(lines: list[tuple[int, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for lineno, line in lines:
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ParseError(SOURCE, f"not key=value: {line.strip()!r}", line=lineno)
        out.setdefault(key.strip(), value.strip())
    return out


def _facts(kind: str, values: dict[str, str], path: str) -> list[Fact]:
    out = []
    for key, name in _KEYS[kind]:
        if values.get(key):
            out.append(Fact(SOURCE, name, values[key]))
        else:
            out.append(Fact(SOURCE, name, None, reason=f"{path}: no {key}="))
    return out


def parse(text: str) -> list[Fact]:
    blocks: list[tuple[str, str, list[tuple[int, str]]]] = []  # (state, path, lines)
    bare: list[tuple[int, str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _FRAME.match(line)
        if m:
            blocks.append((m.group(1), m.group(2), []))
        elif blocks:
            blocks[-1][2].append((lineno, line))
        else:
            bare.append((lineno, line))
    if not blocks:
        values = _values(bare)
        kind = _kind_of_content(values)
        if kind is None:
            raise ParseError(SOURCE, "neither a CANN install info nor a driver version.info file")
        return _facts(kind, values, "(file)")
    out: list[Fact] = []
    found: dict[str, list[Fact]] = {}
    missing: dict[str, str] = {}
    for state, path, lines in blocks:
        kind = _kind_of_path(path)
        if kind is None:
            raise ParseError(SOURCE, f"unknown file {path}", line=None)
        if state == "missing":
            missing.setdefault(kind, path)
        elif kind not in found:
            found[kind] = _facts(kind, _values(lines), path)
    for kind in _KEYS:
        if kind in found:
            out += found[kind]
        else:
            where = missing.get(kind, "not looked for")
            out += [
                Fact(SOURCE, name, None, reason=f"{where}: not installed")
                for _, name in _KEYS[kind]
            ]
    return out


PARSER = Parser(
    "ascend-version-info",
    parse,
    "Ascend driver, firmware and CANN versions from their version/install info files",
    lambda t: (
        (t.startswith(("@@ file ", "@@ missing ")) and "Ascend" in t[:300])
        or "package_name=Ascend-cann" in t[:200]
        or "ascendhal_version=" in t[:500]
    ),
    emits="facts",
)
