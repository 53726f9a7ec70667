"""The SSH executor against real sshd servers on the namespace hosts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest

from aibench.executors.base import Command, NodeUnreachable, ReadyCheck, ServerNotReady
from aibench.executors.ssh import SSHExecutor, remote_command
from aibench.inventory import Inventory, Node
from aibench.inventory_file import load_inventory
from tests.testbed import net
from tests.testbed.bed import TestBed

pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def inventory(testbed_hosts: TestBed, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    return load_inventory(testbed_hosts.write_inventory(path))


def arun(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _run_one(node, cmd, tmp: Path):  # type: ignore[no-untyped-def]
    ex = SSHExecutor(kill_grace=1.0)
    try:
        res = await ex.run(node, cmd, tmp / "out", tmp / "err")
    finally:
        await ex.close()
    return res, (tmp / "out").read_text(), (tmp / "err").read_text()


async def _check(node: Node) -> str | None:
    """Why a fresh executor refuses ``node`` (None: it reaches it)."""
    ex = SSHExecutor()
    try:
        return await ex.check(node)
    finally:
        await ex.close()


def test_run_on_every_host_in_parallel(inventory: Inventory, tmp_path: Path) -> None:
    async def main() -> list[tuple[int | None, str]]:
        ex = SSHExecutor()
        try:
            results = await asyncio.gather(
                *(
                    ex.run(
                        n,
                        Command(("hostname",)),
                        tmp_path / f"{n.name}.out",
                        tmp_path / f"{n.name}.err",
                    )
                    for n in inventory
                )
            )
            # a second round reuses the pooled connections
            again = await ex.run(
                inventory.nodes[0], Command(("true",)), tmp_path / "t.out", tmp_path / "t.err"
            )
            assert again.exit_code == 0
            assert len(ex._conns) == len(inventory)
        finally:
            await ex.close()
        return [
            (r.exit_code, (tmp_path / f"{n.name}.out").read_text().strip())
            for r, n in zip(results, inventory, strict=True)
        ]

    got = arun(main())
    assert got == [(0, n.name) for n in inventory]
    # the PGID line the wrapper prints is not part of the log
    assert (tmp_path / "abt-h1.err").read_text() == ""


def test_exit_code_stderr_env_and_cwd(inventory: Inventory, tmp_path: Path) -> None:
    cmd = Command(
        ("sh", "-c", 'echo "$AB_X" from "$(pwd)"; echo oops >&2; exit 7'),
        env={"AB_X": "it's me"},
        cwd="/usr",
    )
    res, out, err = arun(_run_one(inventory.nodes[1], cmd, tmp_path))
    assert res.exit_code == 7
    assert not res.timed_out
    assert not res.unreachable
    assert out == "it's me from /usr\n"
    assert err == "oops\n"


def test_hostile_argv_arrives_verbatim(inventory: Inventory, tmp_path: Path) -> None:
    hostile = [
        "two words",
        "it's",
        '"double"',
        "$(touch /tmp/aibench-pwned)",
        "`id`",
        "; rm -rf /nonexistent ;",
        "a|b&c>d<e",
        "$HOME",
        "*",
        "back\\slash",
        "new\nline",
        "",
        "-n",
        "ünïcode",
    ]
    py = "import json,sys; print(json.dumps(sys.argv[1:]))"
    res, out, _ = arun(
        _run_one(inventory.nodes[0], Command(("python3", "-c", py, *hostile)), tmp_path)
    )
    assert res.exit_code == 0
    assert json.loads(out) == hostile
    assert not Path("/tmp/aibench-pwned").exists()


def test_bad_env_name_is_refused() -> None:
    with pytest.raises(ValueError, match="environment variable name"):
        remote_command(Command(("true",), env={"A;B": "1"}))


def test_command_not_found(inventory: Inventory, tmp_path: Path) -> None:
    res, _, _ = arun(_run_one(inventory.nodes[0], Command(("no-such-tool-xyz",)), tmp_path))
    assert res.exit_code is None
    assert res.reason == "no-such-tool-xyz: command not found on abt-h1"


def test_timeout_kills_the_remote_process_group(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    node = inventory.node("abt-h3")
    # a shell that forks two sleepers and ignores TERM itself: only a group KILL ends all
    script = "trap '' TERM; sleep 300 & sleep 300 & echo started; wait"
    t0 = time.monotonic()
    res, out, _ = arun(_run_one(node, Command(("sh", "-c", script), timeout=1.5), tmp_path))
    took = time.monotonic() - t0
    assert res.timed_out
    assert res.exit_code is None
    assert "remote process group killed" in res.reason
    assert out == "started\n"  # streamed before the kill
    assert took < 15
    _gone(testbed_hosts, "abt-h3")


def test_cancel_kills_the_remote_process_group(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    node = inventory.node("abt-h4")

    async def main() -> None:
        ex = SSHExecutor(kill_grace=1.0)
        try:
            task = asyncio.ensure_future(
                ex.run(
                    node,
                    Command(("sh", "-c", "sleep 300 & sleep 300")),
                    tmp_path / "o",
                    tmp_path / "e",
                )
            )
            await asyncio.sleep(1.0)
            assert testbed_hosts.pids("abt-h4")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await ex.close()

    arun(main())
    _gone(testbed_hosts, "abt-h4")


def test_server_start_ready_and_stop(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    node = inventory.node("abt-h2")
    client = inventory.node("abt-h1")

    async def main() -> tuple[int | None, int | None, str]:
        ex = SSHExecutor(kill_grace=1.0)
        try:
            srv = await ex.start(
                node,
                Command(("iperf3", "-s", "-p", "15299", "--forceflush")),
                tmp_path / "srv.out",
                tmp_path / "srv.err",
                ReadyCheck(pattern=r"Server listening on 15299", port=15299, timeout=10),
            )
            assert srv.alive
            res = await ex.run(
                client,
                Command(("iperf3", "-c", node.host, "-p", "15299", "-t", "1", "-J")),
                tmp_path / "cli.out",
                tmp_path / "cli.err",
            )
            code = await srv.stop()
            assert not srv.alive
        finally:
            await ex.close()
        return res.exit_code, code, (tmp_path / "cli.out").read_text()

    rc, _srv_code, out = arun(main())
    assert rc == 0
    assert json.loads(out)["end"]["sum_received"]["bits_per_second"] > 1e8
    assert "iperf3" not in testbed_hosts.commands("abt-h2")


def test_server_that_never_gets_ready_is_stopped(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    node = inventory.node("abt-h2")

    async def main() -> None:
        ex = SSHExecutor(kill_grace=1.0)
        try:
            with pytest.raises(ServerNotReady):
                await ex.start(
                    node,
                    Command(("sleep", "60")),
                    tmp_path / "o",
                    tmp_path / "e",
                    ReadyCheck(pattern="never", timeout=1.0),
                )
        finally:
            await ex.close()

    arun(main())
    _gone(testbed_hosts, "abt-h2")  # the sleep 60 is not left: well within its minute


def _with_known_hosts(inventory: Inventory, node_name: str, known: Path):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    n = inventory.node(node_name)
    return replace(n, ssh=replace(n.ssh, known_hosts=str(known)))


def test_host_key_mismatch_is_refused(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    # abt-h2's key listed under abt-h1's address: a changed key
    lines = testbed_hosts.ssh.known_hosts.read_text().splitlines()
    h2_key = next(ln for ln in lines if ln.startswith("10.213.7.2 ")).split(" ", 1)[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"10.213.7.1 {h2_key}\n")
    node = _with_known_hosts(inventory, "abt-h1", known)

    async def main() -> tuple[str | None, object]:
        ex = SSHExecutor()
        try:
            reason = await ex.check(node)
            res = await ex.run(node, Command(("true",)), tmp_path / "o", tmp_path / "e")
            return reason, res
        finally:
            await ex.close()

    reason, res = arun(main())
    assert reason is not None
    assert reason.startswith("abt-h1 (10.213.7.1:22): host key mismatch")
    assert "\n" not in reason
    assert res.unreachable
    assert res.exit_code is None


def test_unknown_host_is_refused(inventory: Inventory, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    node = _with_known_hosts(inventory, "abt-h1", known)

    reason = arun(_check(node))
    assert reason is not None
    assert reason.startswith("abt-h1 (10.213.7.1:22): unknown host key")


def test_unreachable_host_reason(inventory: Inventory, tmp_path: Path) -> None:
    from dataclasses import replace

    # an address on the bed's subnet where no host exists: the connection times out
    ghost = replace(inventory.node("abt-h1"), name="abt-ghost", address="10.213.7.99")
    ghost = replace(ghost, ssh=replace(ghost.ssh, connect_timeout=1.0))
    refused = replace(
        inventory.node("abt-h1"), ssh=replace(inventory.node("abt-h1").ssh, port=2222)
    )

    async def main() -> tuple[str | None, str | None, object]:
        ex = SSHExecutor()
        try:
            r1 = await ex.check(ghost)
            r2 = await ex.check(refused)
            with pytest.raises(NodeUnreachable):
                await ex.start(
                    refused, Command(("true",)), tmp_path / "o", tmp_path / "e", ReadyCheck()
                )
            res = await ex.run(ghost, Command(("true",)), tmp_path / "o", tmp_path / "e")
            return r1, r2, res
        finally:
            await ex.close()

    r1, r2, res = arun(main())
    assert r1 is not None
    assert r1.startswith("abt-ghost (10.213.7.99:22): ")
    assert "timed out" in r1 or "unreachable" in r1.lower()
    assert r2 == "abt-h1 (10.213.7.1:2222): connection refused"
    assert res.unreachable  # type: ignore[attr-defined]


def test_jump_host(testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path) -> None:
    """Through abt-h1 to abt-h2: abt-h2's sshd sees the connection come from abt-h1."""
    from dataclasses import replace

    n = inventory.node("abt-h2")
    node = replace(n, ssh=replace(n.ssh, jump_host="root@10.213.7.1"))
    log = testbed_hosts.ssh.host_dir(testbed_hosts.host("abt-h2")) / "sshd.log"
    before = log.read_text()

    async def main() -> tuple[int | None, str]:
        ex = SSHExecutor()
        try:
            res = await ex.run(node, Command(("hostname",)), tmp_path / "o", tmp_path / "e")
        finally:
            await ex.close()
        return res.exit_code, (tmp_path / "o").read_text()

    code, out = arun(main())
    assert (code, out) == (0, "abt-h2\n")
    new = log.read_text()[len(before) :]
    assert "Accepted publickey for root from 10.213.7.1 " in new


def test_host_key_mismatch_in_a_hashed_known_hosts(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    import subprocess

    lines = testbed_hosts.ssh.known_hosts.read_text().splitlines()
    h2_key = next(ln for ln in lines if ln.startswith("10.213.7.2 ")).split(" ", 1)[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"10.213.7.1 {h2_key}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(known)], check=True, capture_output=True)
    assert known.read_text().startswith("|1|")  # no host name in clear any more
    node = _with_known_hosts(inventory, "abt-h1", known)

    reason = arun(_check(node))
    assert reason is not None
    assert "host key mismatch" in reason


def test_children_left_behind_are_ended_when_the_tool_exits(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    """A forked child that keeps stdout open must neither hold the step nor outlive it."""
    t0 = time.monotonic()
    res, out, _ = arun(
        _run_one(
            inventory.node("abt-h4"),
            Command(("sh", "-c", "sleep 300 & echo parent done; exit 4"), timeout=30),
            tmp_path,
        )
    )
    assert res.exit_code == 4
    assert not res.timed_out
    assert out == "parent done\n"
    assert time.monotonic() - t0 < 10
    _gone(testbed_hosts, "abt-h4")


def test_ssh_config_supplies_hostname_user_and_key(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    """A node known by a Host alias of the ssh_config only (no user, no key in the
    inventory): HostName, User and IdentityFile come from the file, as ssh takes them;
    the host key is still checked against known_hosts."""
    from dataclasses import replace

    h2 = testbed_hosts.host("abt-h2")
    key = testbed_hosts.ssh.identity
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host cfg-h2\n  HostName {h2.address}\n  User root\n  IdentityFile {key}\n")
    # the host key is looked up under the name aibench was given (the Host alias)
    known = tmp_path / "known_hosts"
    lines = testbed_hosts.ssh.known_hosts.read_text().splitlines()
    h2_key = next(ln.split(" ", 1)[1] for ln in lines if ln.startswith("abt-h2 "))
    known.write_text("\n".join([*lines, f"cfg-h2 {h2_key}"]) + "\n")
    n = inventory.node("abt-h2")
    node = replace(
        n,
        name="cfg-h2",
        address="cfg-h2",
        ssh=replace(
            n.ssh, user=None, identity_file=None, config_file=str(cfg), known_hosts=str(known)
        ),
    )
    log = testbed_hosts.ssh.host_dir(h2) / "sshd.log"
    before = log.read_text()

    async def main() -> tuple[int | None, str, str]:
        ex = SSHExecutor()
        try:
            res = await ex.run(node, Command(("hostname",)), tmp_path / "o", tmp_path / "e")
        finally:
            await ex.close()
        return res.exit_code, (tmp_path / "o").read_text(), res.reason

    code, out, reason = arun(main())
    assert (code, out) == (0, "abt-h2\n"), reason
    assert "Accepted publickey for root" in log.read_text()[len(before) :]


def test_env_values_are_not_on_the_remote_command_line(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    """While the step runs, no process on the node shows the value in its argv; the tool
    gets it in its environment."""
    node = inventory.node("abt-h1")
    secret = "Sekr1t-value with spaces"
    py = "import os, time; print(os.environ['SOME_TOKEN'], flush=True); time.sleep(3)"

    async def main() -> tuple[int | None, list[str]]:
        ex = SSHExecutor()
        try:
            task = asyncio.ensure_future(
                ex.run(
                    node,
                    Command(("python3", "-c", py), env={"SOME_TOKEN": secret}),
                    tmp_path / "o",
                    tmp_path / "e",
                )
            )
            await asyncio.sleep(1.5)
            argvs = []
            for pid in net.netns_pids(testbed_hosts.host("abt-h1")):
                with contextlib.suppress(OSError):
                    argvs.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
            res = await task
        finally:
            await ex.close()
        return res.exit_code, argvs

    code, argvs = arun(main())
    assert code == 0
    assert (tmp_path / "o").read_text() == secret + "\n"
    assert any("SOME_TOKEN" in a for a in argvs)  # the wrapper was seen, with the name
    assert not any(secret in a for a in argvs)


def test_secret_values_are_scrubbed_from_the_raw_output_as_it_arrives(
    testbed_hosts: TestBed, inventory: Inventory, tmp_path: Path
) -> None:
    """A step whose command carries its secrets (aibench.secret) has them replaced in its
    raw output before it reaches the disk: while the remote tool still runs, the file
    holds ``***``, never the value."""
    from aibench.secret import Secrets

    node = inventory.node("abt-h1")
    env = {"SOME_TOKEN": "Sekr1t-value-9f3", "DSN": "pg://u:pw-77aa@db"}
    py = (
        "import os, sys, time; print('t', os.environ['SOME_TOKEN'], flush=True);"
        " print('d', os.environ['DSN'], file=sys.stderr, flush=True); time.sleep(3)"
    )
    secrets = Secrets.of([env], marked={"DSN"})

    async def main() -> tuple[int | None, bytes, bytes]:
        ex = SSHExecutor()
        try:
            cmd = Command(("python3", "-c", py), env=env, secrets=secrets)
            task = asyncio.ensure_future(ex.run(node, cmd, tmp_path / "o", tmp_path / "e"))
            await asyncio.sleep(2.0)
            during = (tmp_path / "o").read_bytes() + (tmp_path / "e").read_bytes()
            res = await task
        finally:
            await ex.close()
        return res.exit_code, during, (tmp_path / "o").read_bytes() + (tmp_path / "e").read_bytes()

    code, during, after = arun(main())
    assert code == 0
    assert b"t ***" in during
    for data in (during, after):
        assert b"Sekr1t" not in data
        assert b"pw-77aa" not in data
    assert b"d ***" in after


def _gone(bed: TestBed, name: str, within: float = 15.0) -> None:
    """Nothing but the daemons is left on the host within ``within`` s: the kill, its grace
    and the session's end over SSH (5 s was once too short with both cores busy)."""
    deadline = time.monotonic() + within
    while bed.pids(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = bed.processes(name)
    assert left == {}, left
