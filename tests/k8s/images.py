"""Container images for the test-bed cluster, built here without a registry.

Two images, written as docker-archive tars (``docker save`` layout: ``manifest.json``, an
image config, one layer tar) that ``ctr -n k8s.io images import`` reads:

* ``aibench.local/pause`` — the pod sandbox: ``pause.c`` linked with ``gcc -static``;
* ``aibench.local/tools`` — busybox-static (``/bin/sh`` and the usual commands), and
  ``fio`` and ``iperf3`` copied from this machine with every shared library ``ldd``
  names, plus ``python3`` with its standard library and the project's replay programs
  (``tests/programs``, with the fixtures they read) under ``/opt/aibench``; Open MPI's
  launcher (``mpirun``, ``orted``, its MCA components, help texts and configuration) and
  OpenSSH (``sshd``, ``ssh``) from this machine's Debian packages, for launches across
  worker Pods; ``/opt/aibench/bin/all_reduce_perf`` runs the nccl-tests replay of a real
  two-node log, and ``/opt/aibench/slow-bin/all_reduce_perf`` the same after 60 s.

Each tar is named by a hash of what went into it and kept in the cache directory, so a
second bed on the same machine imports it without building it again.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PAUSE = "aibench.local/pause:1"
TOOLS_REPO = "aibench.local/tools"
TOOL_BINARIES = (  # Debian's
    "/usr/bin/fio",
    "/usr/bin/iperf3",
    "/usr/bin/python3",
    "/usr/bin/lsblk",
    "/usr/bin/findmnt",
    "/usr/bin/orterun",
    "/usr/bin/orted",
    "/usr/sbin/sshd",
    "/usr/bin/ssh",
)
# Open MPI's names for its launcher (Debian's alternatives end at orterun)
MPI_LINKS = ("/usr/bin/mpirun", "/usr/bin/mpiexec")
MPI_COMPONENTS = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"
PMIX = "/usr/lib/x86_64-linux-gnu/pmix2"  # Open MPI 4.1's PMIx (Debian's libpmix2)
MPI_TREES = ("/usr/share/openmpi", "/etc/openmpi", f"{PMIX}/share")
NCCL_LOG = "tests/fixtures/nccl-tests/v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
# the replay programs and what they read, relative to the checkout
PROJECT_FILES = ("tests/programs", "tests/fixtures/tool-help", NCCL_LOG)


def _ldd(path: str) -> list[str]:
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            libs.append(parts[2])
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])  # the dynamic loader
    return libs


def _add_file(tar: tarfile.TarFile, src: str, dest: str) -> None:
    """``src`` at ``dest`` in the image, symlinks resolved to the file they name."""
    real = os.path.realpath(src)
    info = tar.gettarinfo(real, arcname=dest.lstrip("/"))
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    with open(real, "rb") as f:
        tar.addfile(info, f)


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type = tarfile.DIRTYPE
    info.mode = 0o1777 if name in ("/tmp", "/scratch") else 0o755
    tar.addfile(info)


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def _add_text(tar: tarfile.TarFile, name: str, text: str, mode: int = 0o644) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _tree(tar: tarfile.TarFile, src: Path, dest: str) -> None:
    """A folder at ``dest`` (a single file when ``src`` is one)."""
    if src.is_file():
        _add_file(tar, str(src), dest)
        return
    for path in sorted(src.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        rel = f"{dest}/{path.relative_to(src)}"
        if path.is_dir():
            _add_dir(tar, rel)
        elif path.is_file():
            _add_file(tar, str(path), rel)


def _tools_layer(tar: tarfile.TarFile) -> None:
    for d in ("/bin", "/usr", "/usr/bin", "/usr/sbin", "/lib", "/lib64", "/usr/lib", "/etc",
              "/tmp", "/scratch", "/opt", "/opt/aibench", "/proc", "/sys", "/dev", "/root",
              "/run", "/var", "/var/empty"):  # fmt: skip
        _add_dir(tar, d)
    busybox = shutil.which("busybox") or "/bin/busybox"
    _add_file(tar, busybox, "/bin/busybox")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for applet in applets.stdout.split():
        if applet != "busybox":
            _add_link(tar, f"/bin/{applet}", "busybox")
    _add_binaries(tar, [*TOOL_BINARIES, *_mpi_components()])
    for link in MPI_LINKS:
        _add_link(tar, link, "orterun")
    stdlib = subprocess.run(
        ["/usr/bin/python3", "-c", "import os; print(os.path.dirname(os.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for tree in (stdlib, *MPI_TREES):
        _tree(tar, Path(tree), tree)
    for rel in PROJECT_FILES:
        _tree(tar, ROOT / rel, f"/opt/aibench/{rel}")
    _etc(tar)
    _replay_wrappers(tar)


def _mpi_components() -> list[str]:
    found = [*Path(MPI_COMPONENTS).glob("*.so"), *Path(PMIX).glob("lib/pmix/*.so")]
    return sorted(str(p) for p in found)


def _add_binaries(tar: tarfile.TarFile, paths: list[str]) -> None:
    """Each program or library at its path, with every shared library ``ldd`` names."""
    seen_dirs: set[str] = set()
    libs: set[str] = set()
    for path in paths:
        if not os.path.exists(path):
            raise RuntimeError(f"{path} is not installed; the tool image needs it")
        libs.update(_ldd(path))
    for path in sorted(libs | set(paths)):
        for d in _parents(path):
            if d not in seen_dirs:
                seen_dirs.add(d)
                _add_dir(tar, d)
        _add_file(tar, path, path)


def _etc(tar: tarfile.TarFile) -> None:
    """Users (root; ``sshd`` for its privilege separation), and sshd's configuration: the
    worker Pods pass the rest on its command line."""
    _add_text(tar, "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
              "sshd:x:100:65534::/run/sshd:/bin/false\n"
              "nobody:x:65534:65534::/:/bin/false\n")  # fmt: skip
    _add_text(tar, "/etc/group", "root:x:0:\nnogroup:x:65534:\n")
    _add_text(tar, "/etc/hosts", "127.0.0.1 localhost\n")
    _add_text(tar, "/etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n")
    _add_dir(tar, "/etc/ssh")
    _add_text(tar, "/etc/ssh/sshd_config", "UsePAM no\n")


def _replay_wrappers(tar: tarfile.TarFile) -> None:
    replay = "/opt/aibench/tests/programs/nccl_tests_replay.py"
    run = (f"exec python3 {replay} --fixture /opt/aibench/{NCCL_LOG} --binary all_reduce_perf"
           ' "$@"\n')  # fmt: skip
    for d, first in (("bin", ""), ("slow-bin", "sleep 60\n")):
        _add_dir(tar, f"/opt/aibench/{d}")
        _add_text(tar, f"/opt/aibench/{d}/all_reduce_perf", "#!/bin/sh\n" + first + run, 0o755)


def _parents(path: str) -> list[str]:
    parts = Path(path).parent.parts
    return ["/" + "/".join(parts[1 : i + 1]) for i in range(1, len(parts))]


def _pause_layer(tar: tarfile.TarFile, binary: Path) -> None:
    _add_file(tar, str(binary), "/pause")


def _archive(out: Path, repo_tag: str, layer: bytes, entrypoint: list[str]) -> None:
    """Write a docker-archive tar with one layer."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],
            **({"Entrypoint": entrypoint} if entrypoint else {"Cmd": ["/bin/sh"]}),
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "tests/k8s/images.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    layer_name = diff_id.split(":")[1] + "/layer.tar"
    manifest = [{"Config": config_name, "RepoTags": [repo_tag], "Layers": [layer_name]}]
    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as tar:
        for name, data in (
            (config_name, config_bytes),
            (layer_name, layer),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(out)


def _layer(fill: object, *args: object) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        fill(tar, *args)  # type: ignore[operator]
    return buf.getvalue()


def _inputs_hash() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for tool in (*TOOL_BINARIES, MPI_COMPONENTS, PMIX):
        h.update(tool.encode() + str(os.stat(tool).st_mtime_ns).encode())
    for rel in PROJECT_FILES:
        top = ROOT / rel
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(ROOT)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build(cache: Path) -> tuple[list[Path], str]:
    """The image tars to import (built when not cached) and the tool image's reference."""
    cache.mkdir(parents=True, exist_ok=True)
    pause_tar = cache / "pause.tar"
    if not pause_tar.exists():
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "pause"
            subprocess.run(
                ["gcc", "-static", "-O2", "-o", str(binary), str(HERE / "pause.c")], check=True
            )
            _archive(pause_tar, PAUSE, _layer(_pause_layer, binary), ["/pause"])
    tag = _inputs_hash()
    tools_ref = f"{TOOLS_REPO}:{tag}"
    tools_tar = cache / f"tools-{tag}.tar"
    if not tools_tar.exists():
        for old in cache.glob("tools-*.tar"):
            old.unlink()
        _archive(tools_tar, tools_ref, _layer(_tools_layer), [])
    return [pause_tar, tools_tar], tools_ref
