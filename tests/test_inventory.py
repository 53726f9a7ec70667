"""The inventory file: hostlists, defaults and overrides, and one-line errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import cli
from aibench.errors import ConfigError
from aibench.inventory import Node, local_inventory, safe_name
from aibench.inventory_file import load_inventory

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_hostlist_expansion_and_address_forms(tmp_path: Path) -> None:
    inv = load_inventory(
        write(
            tmp_path,
            """
nodes:
  - name: gpu[001-003]
    address_pattern: "10.0.0.{n}"
  - name: r[1-2]-n[01-02]
    address_pattern: "{name}.ib.example"
  - name: x[7-8]
    address: "10.1.0.[17-18]"
  - name: solo
    address: 192.168.9.1
  - name: bare
""",
        )
    )
    assert [n.name for n in inv] == [
        "gpu001", "gpu002", "gpu003", "r1-n01", "r1-n02", "r2-n01", "r2-n02",
        "x7", "x8", "solo", "bare",
    ]  # fmt: skip
    addr = {n.name: n.address for n in inv}
    assert addr["gpu002"] == "10.0.0.2"
    assert addr["r2-n01"] == "r2-n01.ib.example"
    assert addr["x8"] == "10.1.0.18"
    assert addr["solo"] == "192.168.9.1"
    assert inv.node("bare").host == "bare"
    assert inv.source == str(tmp_path / "inv.yaml")


def test_index_placeholder(tmp_path: Path) -> None:
    inv = load_inventory(
        write(tmp_path, 'nodes:\n  - {name: "n[10-11]", address_pattern: "10.9.0.{index}"}\n')
    )
    assert [n.address for n in inv] == ["10.9.0.1", "10.9.0.2"]


def test_defaults_and_per_node_overrides(tmp_path: Path) -> None:
    inv = load_inventory(
        write(
            tmp_path,
            """
name: lab
defaults:
  executor: ssh
  labels: {role: compute, rack: r0}
  gpus: {model: H100, count: 8}
  data_dirs: [/scratch]
  ssh: {port: 2200}
ssh: {user: ops, identity_file: ~/.ssh/id_x, known_hosts: /etc/kh, connect_timeout: 4}
slurm: {partition: gpu, extra_args: [--exclusive]}
limits: {max_parallel: 8, max_network_parallel: 2}
nodes:
  - name: a[1-2]
    labels: {rack: r1}
  - name: b1
    executor: slurm
    gpus: {model: H200, count: 4}
    hcas: [{name: mlx5_0, netdev: ib0, port: 1, gid_index: 3, rate_gbps: 400}]
    ssh: {port: 22, user: root}
""",
        )
    )
    a1, b1 = inv.node("a1"), inv.node("b1")
    assert inv.name == "lab"
    assert a1.executor == "ssh"
    assert b1.executor == "slurm"
    assert dict(a1.labels) == {"role": "compute", "rack": "r1"}
    assert dict(b1.labels) == {"role": "compute", "rack": "r0"}
    assert a1.facts["gpus"] == {"model": "H100", "count": 8}
    assert b1.facts["gpus"] == {"model": "H200", "count": 4}
    assert a1.facts["data_dirs"] == ["/scratch"]
    assert "hcas" not in a1.facts
    assert b1.facts["hcas"] == [
        {"name": "mlx5_0", "netdev": "ib0", "port": 1, "gid_index": 3, "rate_gbps": 400.0}
    ]
    assert (a1.ssh.user, a1.ssh.port, a1.ssh.known_hosts) == ("ops", 2200, "/etc/kh")
    assert (b1.ssh.user, b1.ssh.port, b1.ssh.connect_timeout) == ("root", 22, 4)
    assert a1.slurm.partition == "gpu"
    assert a1.slurm.extra_args == ("--exclusive",)
    assert (inv.limits.max_parallel, inv.limits.max_network_parallel) == (8, 2)
    assert inv.labels("rack") == {"a1": "r1", "a2": "r1", "b1": "r0"}


def test_the_examples_load() -> None:
    ssh = load_inventory(ROOT / "examples" / "inventory-ssh.yaml")
    slurm = load_inventory(ROOT / "examples" / "inventory-slurm.yaml")
    assert len(ssh) == 9
    assert ssh.node("gpu004").address == "10.0.1.4"
    assert len(slurm) == 32
    assert {n.executor for n in slurm} == {"slurm"}


BAD = [
    ("nodes:\n  - name: gpu[3-1]\n", "nodes[0].name", "invalid hostlist 'gpu[3-1]'"),
    ("nodes:\n  - name: a\n    colour: red\n", "nodes[0].colour", "unknown key"),
    ("nodes:\n  - name: '-oProxyCommand=x'\n", "nodes[0].name", "invalid node name"),
    ("nodes:\n  - name: a\n    address: 'a;reboot'\n", "nodes[0].address", "invalid node address"),
    ("nodes:\n  - {name: a, executor: telnet}\n", "nodes[0].executor", "Input should be"),
    ("ssh: {port: 70000}\nnodes: [{name: a}]\n", "ssh.port", "less than or equal to 65535"),
    (
        "slurm: {extra_args: ['--nodelist=x']}\nnodes: [{name: a}]\n",
        "slurm.extra_args",
        "set by aibench itself",
    ),
    (
        "slurm: {extra_args: ['--x; rm -rf /']}\nnodes: [{name: a}]\n",
        "slurm.extra_args",
        "invalid srun option",
    ),
    ("nodes:\n  - name: a\n  - name: 'a'\n", "nodes[1].name", "already defined in nodes[0]"),
    (
        "nodes:\n  - {name: 'n[1-3]', address: '10.0.0.[1-2]'}\n",
        "nodes[0].address",
        "2 addresses for 3 names",
    ),
    (
        "nodes:\n  - {name: a, address_pattern: '{name.__class__}'}\n",
        "nodes[0]",
        "only {name}, {index} and {n} may appear",
    ),
    (
        "nodes:\n  - {name: 'gpu[001-300]', address_pattern: '10.0.1.{n}'}\n",
        "nodes[0].address_pattern",
        "'10.0.1.{n}' makes '10.0.1.256' for node 'gpu256', not an IP address",
    ),
    (
        "nodes:\n  - {name: a, address_pattern: '10.0.1.{n}'}\n",
        "nodes[0].address_pattern",
        "makes '10.0.1.' for node 'a'",
    ),
    ("nodes: []\n", "nodes", "at least 1 item"),
    ("limits: {max_parallel: 0}\nnodes: [{name: a}]\n", "limits.max_parallel", "greater than"),
    (
        "defaults: {labels: {rack: 'r 1'}}\nnodes: [{name: a}]\n",
        "defaults.labels.rack",
        "should match pattern",
    ),
    (
        "nodes:\n  - {name: a, hcas: [{name: mlx5_0, port: 0}]}\n",
        "nodes[0].hcas[0].port",
        "greater than or equal to 1",
    ),
    ("ssh: {jump_host: 'bad host'}\nnodes: [{name: a}]\n", "ssh.jump_host", "invalid jump_host"),
    ("schema_version: 2\nnodes: [{name: a}]\n", "schema_version", "Input should be 1"),
]


@pytest.mark.parametrize(("text", "key", "problem"), BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_malformed_inventory_is_one_line_with_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, problem: str
) -> None:
    bad = write(tmp_path, text, "bad.yaml")
    with pytest.raises(ConfigError) as info:
        load_inventory(bad)
    assert info.value.file == str(bad)
    assert info.value.key == key
    assert problem in info.value.problem
    # and through the command line: one line, exit 2
    assert cli.main(["plan", "--inventory", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"aibench: error: {bad}: {key}: ")


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_inventory(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="invalid YAML at line 3"):
        load_inventory(write(tmp_path, "nodes:\n  - name: [a\n"))


def test_safe_name_and_local_inventory() -> None:
    assert safe_name("gpu-01.example") == "gpu-01.example"
    assert safe_name("fe80::1") == "fe80::1"
    for bad in ["", "-x", "a b", "a;b", "$(id)", "a/b", "x" * 254]:
        with pytest.raises(ValueError, match="invalid"):
            safe_name(bad)
    with pytest.raises(ValueError, match="node name"):
        Node(name="a b")
    local = local_inventory()
    assert len(local) == 1
    assert local.nodes[0].executor == "local"
