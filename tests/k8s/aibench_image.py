"""The image that runs aibench itself in the test-bed cluster (the CronJob example's Pod).

One layer on top of what the tools image holds (``images._tools_layer``: busybox for
``/bin/sh``, fio, iperf3, python3 with its standard library):

* the standard library's byte code (``__pycache__``, which the tools image leaves out), so
  that a Pod that runs as a user who cannot write there does not compile it on every run;
* the Python packages ``aibench run`` needs, from the environment this runs in, under
  ``/usr/local/lib/python3.X/dist-packages`` (on python3's path): the requirements of
  ``aibench-cluster[kubernetes]``, followed to the end, as ``pip install`` would install
  them, less :data:`LEAVE_OUT` (what only other executors import) and
  :data:`SKIP_DIRS` (the kubernetes client's asyncio twin). Their byte code comes with them;
* every shared library their extension modules and the standard library's need (``ldd``)
  that the tools layer does not already hold;
* the ``aibench`` package from this checkout (its files, not an editable-install pointer)
  and ``/usr/local/bin/aibench``, the console script;
* ``/etc/passwd`` with the ``nonroot`` user (65532) that the example's Pod runs as.

Like the tools image, the tar is named by a hash of what went into it and kept in the
cache directory.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from packaging.requirements import Requirement

from tests.k8s import images

REPO = "aibench.local/aibench"
DISTRIBUTION = "aibench-cluster"
EXTRAS = ("kubernetes",)
# Required by the core or the kubernetes client but imported by none of the paths an
# in-cluster run takes (the SSH executor's asyncssh and what it needs; the asyncio client
# of kubernetes and its aiohttp), measured by listing ``sys.modules`` after ``aibench run``,
# ``aibench metrics --pushgateway`` and ``aibench verify``.
LEAVE_OUT = frozenset({
    "asyncssh", "cryptography", "cffi", "pycparser",
    "aiohttp", "aiohttp-retry", "aiohappyeyeballs", "aiosignal", "attrs", "frozenlist",
    "multidict", "propcache", "yarl",
})  # fmt: skip
SKIP_DIRS = ("kubernetes/aio/",)
PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = f"/usr/local/lib/{PYVER}/dist-packages"
PASSWD = (
    "root:x:0:0:root:/root:/bin/sh\n"
    "nobody:x:65534:65534::/:/bin/false\n"
    "nonroot:x:65532:65532:nonroot:/tmp:/bin/false\n"
)
SCRIPT = "#!/usr/bin/python3\nimport sys\n\nfrom aibench.cli import main\n\nsys.exit(main())\n"


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions() -> list[md.Distribution]:
    """The installed distributions ``aibench-cluster[kubernetes]`` needs, less LEAVE_OUT."""
    found: dict[str, md.Distribution] = {}
    todo: list[tuple[str, tuple[str, ...]]] = [(DISTRIBUTION, EXTRAS)]
    while todo:
        name, extras = todo.pop()
        if _key(name) in found or _key(name) in LEAVE_OUT:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise RuntimeError(f"{name} is not installed here; the aibench image needs it "
                               "(make venv)") from None  # fmt: skip
        found[_key(name)] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            wanted = req.marker is None or any(
                req.marker.evaluate({"extra": e}) for e in (*extras, "")
            )
            if wanted:
                todo.append((req.name, tuple(req.extras)))
    del found[_key(DISTRIBUTION)]  # the checkout's package is added as files
    return sorted(found.values(), key=lambda d: _key(d.metadata["Name"]))


def package_files(dists: list[md.Distribution]) -> list[tuple[Path, str]]:
    """(file on this machine, path relative to site-packages) of every file of ``dists``."""
    out = []
    for dist in dists:
        for f in dist.files or []:
            rel = f.as_posix()
            if rel.startswith("..") or rel.startswith(SKIP_DIRS):
                continue  # console scripts (bin/...) and the skipped trees
            src = Path(str(dist.locate_file(f)))
            if src.is_file():
                out.append((src, rel))
    return sorted(out, key=lambda x: x[1])


def _stdlib() -> Path:
    """The standard library of the image's python3 (the machine's, as the tools layer's)."""
    out = subprocess.run(
        ["/usr/bin/python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


def _add_parents(tar: tarfile.TarFile, path: str, seen: set[str]) -> None:
    for d in images._parents(path):
        if d not in seen:
            seen.add(d)
            images._add_dir(tar, d)


def _extension_libs(files: list[Path]) -> set[str]:
    """The shared libraries the extension modules ``files`` load that live outside them."""
    inside = {os.path.realpath(f) for f in files}
    libs: set[str] = set()
    for f in files:
        if f.name.endswith(".so") or ".so." in f.name:
            found = (os.path.normpath(lib) for lib in images._ldd(str(f)))
            libs.update(lib for lib in found if os.path.realpath(lib) not in inside)
    return libs


def _aibench_layer(tar: tarfile.TarFile) -> None:
    images._tools_layer(tar)
    seen = {d for d in ("/usr", "/usr/lib", "/usr/bin", "/lib", "/lib64", "/etc", "/tmp")}
    stdlib = _stdlib()
    if stdlib.name != PYVER:
        raise RuntimeError(f"the image's python3 is {stdlib.name}, the packages are {PYVER}'s")
    for cache in sorted(stdlib.rglob("__pycache__")):
        if "site-packages" in cache.parts or "dist-packages" in cache.parts:
            continue
        _add_parents(tar, f"{cache}/x", seen)
        for pyc in sorted(cache.glob("*.pyc")):
            images._add_file(tar, str(pyc), str(pyc))
    files = package_files(distributions())
    for src, rel in files:
        _add_parents(tar, f"{SITE}/{rel}", seen)
        images._add_file(tar, str(src), f"{SITE}/{rel}")
    have = {lib for tool in images.TOOL_BINARIES for lib in images._ldd(tool)}
    dynload = sorted((stdlib / "lib-dynload").glob("*.so"))
    for lib in sorted(_extension_libs([*dynload, *(src for src, _ in files)]) - have):
        _add_parents(tar, lib, seen)
        images._add_file(tar, lib, lib)
    images._add_dir(tar, f"{SITE}/aibench")
    images._tree(tar, images.ROOT / "aibench", f"{SITE}/aibench")
    images._add_dir(tar, "/usr/local/bin")
    images._add_text(tar, "/usr/local/bin/aibench", SCRIPT, mode=0o755)
    images._add_text(tar, "/etc/passwd", PASSWD)
    images._add_text(tar, "/etc/group", "root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n")


def _inputs_hash() -> str:
    h = hashlib.sha256(images._inputs_hash().encode())
    h.update(Path(__file__).read_bytes())
    for dist in distributions():
        h.update(f"{dist.metadata['Name']}=={dist.version}\n".encode())
    for path in sorted((images.ROOT / "aibench").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(images.ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build(cache: Path) -> tuple[Path, str]:
    """The aibench image's tar (built when not cached) and its reference."""
    cache.mkdir(parents=True, exist_ok=True)
    tag = _inputs_hash()
    ref = f"{REPO}:{tag}"
    tar = cache / f"aibench-{tag}.tar"
    if not tar.exists():
        for old in cache.glob("aibench-*.tar"):
            old.unlink()
        images._archive(tar, ref, images._layer(_aibench_layer), [])
    return tar, ref


if __name__ == "__main__":  # python -m tests.k8s.aibench_image DIR: build it there
    path, name = build(Path(sys.argv[1]))
    print(f"{name} {path} {os.path.getsize(path) >> 20} MiB")
