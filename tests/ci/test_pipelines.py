"""The example CI pipelines in examples/ci/: valid for their CI system, and the shell
commands inside them do what they promise when run as the CI system runs them.

Schemas: the GitHub Actions workflow and GitLab CI files are validated against the
SchemaStore schemas that check-jsonschema ships (``--builtin-schema vendor.*``, offline);
a control with one misspelt key fails. The Jenkinsfile has no schema: a small reader of its
block structure checks the declarative layout (a control with a step outside ``steps``
fails).

Commands: each pipeline's shell scripts are taken out of the file and run as its system
runs them (GitHub: ``bash --noprofile --norc -eo pipefail`` per step, later steps only
with ``if: always()`` after a failure; GitLab: ``script`` under ``bash -eo pipefail``, then
``after_script`` whatever happened; Jenkins: the ``sh '''...'''`` blocks under
``sh -xe``, the ``post { always }`` ones last), on this machine with the local executor,
in a fresh workspace each night and the history database outside it:

* night 1: a one-step suite (the nightly's iperf3 step, 1 s) passes; junit.xml and
  summary.md are published; the history holds the run (the Jenkins run passes
  ``--lang zh`` through AIBENCH_ARGS: its summary is in Chinese);
* the history trick: night 1 is recorded again as four earlier nights, so that the
  history has the five good runs a regression verdict needs (min_history);
* night 2: the same step with iperf3 ``-b 200M`` measures a real, throttled loopback;
  aibench exits 1 on the regression verdicts alone (the spec's floor still passes), the
  job fails, and junit.xml and summary.md are still published, naming the regression.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from aibench.history import History
from aibench.model import Outcome, Run

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
GITHUB = CI / "github-actions-nightly.yml"
GITLAB = CI / "gitlab-ci-nightly.yml"
JENKINS = CI / "Jenkinsfile"
AIBENCH = Path(sys.executable).with_name("aibench")
IPERF3 = shutil.which("iperf3")

BASH = ("bash", "--noprofile", "--norc", "-eo", "pipefail")
SPEC = """\
schema_version: 1
name: ci-floor
description: Loopback TCP floor for the pipeline test (far below any loopback).
checks:
  - id: tcp-throughput
    description: TCP throughput client to server, as the receiver counted it.
    select: {tool: iperf3, metric: throughput, step: iperf3-tcp, dims: {side: receiver}}
    scope: pair
    unit: Mbit/s
    min: 1
"""
SUITE = """\
schema_version: 1
name: ci-nightly
description: The nightly suite's iperf3 step, shortened to one second.
spec: {spec}
settings: {{history: true, base_port: {port}}}
steps:
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 1{extra}}}
"""


@dataclass(frozen=True)
class Script:
    name: str
    text: str
    shell: tuple[str, ...]
    always: bool  # runs after an earlier failure too


@dataclass(frozen=True)
class Job:
    env: dict[str, str]
    scripts: tuple[Script, ...]


def github_job() -> Job:
    wf = yaml.safe_load(GITHUB.read_text())
    job = wf["jobs"]["nightly"]
    env = {**wf.get("env", {}), **job.get("env", {})}
    scripts = []
    for step in job["steps"]:
        if "run" in step:
            assert step["shell"] == "bash"
            always = str(step.get("if", "")).strip() == "always()"
            scripts.append(Script(step["name"], step["run"], BASH, always))
    return Job({k: str(v) for k, v in env.items()}, tuple(scripts))


def gitlab_job() -> Job:
    doc = yaml.safe_load(GITLAB.read_text())
    job = doc["aibench-nightly"]
    env = {**doc.get("variables", {}), **job.get("variables", {})}
    main = "\n".join([*job.get("before_script", []), *job["script"]])
    after = "\n".join(job["after_script"])
    return Job(
        {k: str(v) for k, v in env.items()},
        (
            Script("script", main, ("bash", "-eo", "pipefail"), False),
            Script("after_script", after, ("bash", "-eo", "pipefail"), True),
        ),
    )


_GROOVY_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "$": "$", "\n": ""}


def groovy_single_quoted(body: str) -> str:
    """The value of a Groovy ''' string: its escapes applied (a backslash before a newline
    joins the lines)."""
    return re.sub(r"\\(.)", lambda m: _GROOVY_ESCAPES.get(m[1], m[0]), body, flags=re.S)


def jenkins_job() -> Job:
    text = JENKINS.read_text()
    env_block = re.search(r"environment\s*\{(.*?)\n\s*\}", text, re.S)
    assert env_block
    env = dict(re.findall(r"^\s*(\w+)\s*=\s*'([^']*)'", env_block[1], re.M))
    post = text.index("\n    post {")
    scripts = []
    for m in re.finditer(r"\bsh\s+'''(.*?)'''", text, re.S):
        always = m.start() > post
        name = "post always" if always else "stage"
        scripts.append(Script(name, groovy_single_quoted(m[1]), ("sh", "-xe"), always))
    return Job(env, tuple(scripts))


JOBS = {"github": github_job, "gitlab": gitlab_job, "jenkins": jenkins_job}


@dataclass(frozen=True)
class JobResult:
    ok: bool
    returncodes: dict[str, int]
    log: str


def run_job(job: Job, workspace: Path, overrides: dict[str, str]) -> JobResult:
    env = {**os.environ, **job.env, **overrides}
    failed = False
    codes: dict[str, int] = {}
    log = []
    for i, s in enumerate(job.scripts):
        if failed and not s.always:
            continue
        path = workspace.parent / f".script-{i}.sh"
        path.write_text(s.text)
        proc = subprocess.run(
            [*s.shell, str(path)],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        path.unlink()
        codes[s.name] = proc.returncode
        log.append(f"--- {s.name}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        failed = failed or proc.returncode != 0
    return JobResult(not failed, codes, "\n".join(log))


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now (within base_port's range)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if 1024 <= port <= 63000:
            return port
    raise AssertionError("no free port below 63000")


def _junit(path: Path) -> tuple[int, int, list[str]]:
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    failed = [c.get("name", "") for c in cases if c.find("failure") is not None]
    return len(cases), len(failed), failed


def _only_run(out: Path) -> Run:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return Run.from_dict(json.loads((dirs[0] / "run.json").read_text()))


@pytest.mark.slow
@pytest.mark.skipif(IPERF3 is None, reason="iperf3 is not installed")
@pytest.mark.parametrize("kind", sorted(JOBS))
def test_pipeline_keeps_the_history_and_fails_on_a_regression(kind: str, tmp_path: Path) -> None:
    job = JOBS[kind]()
    assert job.env["AIBENCH_SUITE"] == "nightly"
    assert Path(job.env["AIBENCH_HISTORY"]).is_absolute()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    good, slow = tmp_path / "ci-nightly.yaml", tmp_path / "ci-nightly-throttled.yaml"
    port = free_port()  # not the default 15201, which other tests on this host may hold
    # paced too, 20 times the throttled night: loopback flat out costs a core for the second
    good.write_text(SUITE.format(spec=spec, port=port, extra=", bandwidth: 4G"))
    slow.write_text(SUITE.format(spec=spec, port=port, extra=", bandwidth: 200M"))
    history = tmp_path / "var" / "lib" / "aibench" / "history.sqlite"  # outside the workspace
    workspace = tmp_path / "workspace"
    step_summary = tmp_path / "github-step-summary.md"
    # one pipeline passes options through AIBENCH_ARGS: the reports in Chinese
    zh = kind == "jenkins"
    overrides = {
        "AIBENCH_ARGS": "--lang zh" if zh else "",
        "AIBENCH": str(AIBENCH),
        "AIBENCH_HISTORY": str(history),
        "GITHUB_STEP_SUMMARY": str(step_summary),
    }
    out = workspace / job.env["AIBENCH_OUT"]

    # night 1: passes, publishes, records
    workspace.mkdir()
    night1 = run_job(job, workspace, {**overrides, "AIBENCH_SUITE": str(good)})
    assert night1.ok, night1.log
    first = _only_run(out)
    assert first.outcome is Outcome.PASS
    assert _junit(out / "junit.xml")[:2] == (1, 0)
    verdict = "通过" if zh else "PASS"
    assert (out / "summary.md").read_text().startswith(f"## ✔ aibench ci-nightly: **{verdict}**")
    if kind == "github":
        assert step_summary.read_text() == (out / "summary.md").read_text()
    hist = History(history)
    assert [r.id for r in hist.runs()] == [first.id]

    # the history trick: night 1 again as four earlier good nights (min_history is 5)
    t0 = datetime.fromisoformat(first.started.replace("Z", "+00:00"))
    for days in range(1, 5):
        started = (t0 - timedelta(days=days)).isoformat().replace("+00:00", "Z")
        hist.record(first.replace(id=f"{first.id}-minus-{days}d", started=started))

    # the CI system wipes the workspace; night 2 is throttled to 200 Mbit/s
    shutil.rmtree(workspace)
    workspace.mkdir()
    night2 = run_job(job, workspace, {**overrides, "AIBENCH_SUITE": str(slow)})
    assert not night2.ok, night2.log
    first_script = job.scripts[0].name  # the one that runs aibench
    assert night2.returncodes[first_script] == 1, night2.log  # aibench: checks failed
    second = _only_run(out)
    failing = [v for v in second.verdicts if v.outcome.failing]
    assert failing
    assert all(v.check.startswith("regression:iperf3|") for v in failing), failing
    assert any(v.check.startswith("regression:iperf3|throughput|iperf3-tcp|") for v in failing)
    floor = next(v for v in second.verdicts if v.check == "tcp-throughput")
    assert floor.outcome is Outcome.PASS  # the spec alone would have passed
    assert len(hist.runs()) == 6
    assert {first.id, second.id} <= {r.id for r in hist.runs()}
    # published even though the job failed
    cases, failures, names = _junit(out / "junit.xml")
    assert failures == len(failing)
    assert cases == len(second.verdicts)
    assert any("regression:iperf3|throughput|iperf3-tcp" in n for n in names)
    summary = (out / "summary.md").read_text()
    assert summary.startswith(f"## ✖ aibench ci-nightly: **{'失败' if zh else 'FAIL'}**")
    assert "regression:iperf3" in summary.replace("\\", "")
    run_dir = next(d for d in out.iterdir() if d.is_dir())
    assert 'id="history"' in (run_dir / "report.html").read_text()  # trend over the nights
    if kind == "github":
        assert step_summary.read_text().endswith(summary)


# ---- schemas and structure ----------------------------------------------------------


def check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("path", "schema", "good", "bad"),
    [
        (GITHUB, "vendor.github-workflows", "    runs-on: ", "    runs_on: "),
        (GITLAB, "vendor.gitlab-ci", "  after_script:", "  after_scripts:"),
    ],
)
def test_pipeline_matches_its_schema(
    path: Path, schema: str, good: str, bad: str, tmp_path: Path
) -> None:
    proc = check_jsonschema(schema, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / path.name
    text = path.read_text()
    assert text.count(good) == 1
    broken.write_text(text.replace(good, bad))
    proc = check_jsonschema(schema, broken)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Schema validation errors" in proc.stdout + proc.stderr


@dataclass
class Block:
    name: str
    args: str
    children: list[Block]


def groovy_blocks(text: str) -> Block:
    """The ``name(args) { ... }`` tree of a Groovy file, strings and comments skipped;
    an unbalanced brace or an unterminated string is a ValueError."""
    root = Block("(file)", "", [])
    stack = [root]
    i, head = 0, ""
    while i < len(text):
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment")
            i = end + 2
            continue
        for quote in ("'''", '"""', "'", '"'):
            if text.startswith(quote, i):
                j = i + len(quote)
                while True:
                    k = text.find(quote, j)
                    if k < 0:
                        raise ValueError(f"unterminated string at offset {i}")
                    if text[k - 1] != "\\":
                        break
                    j = k + 1
                head += text[i : k + len(quote)]
                i = k + len(quote)
                break
        else:
            ch = text[i]
            if ch == "{":
                m = re.search(r"([A-Za-z_]\w*)\s*(\(.*\))?\s*$", head, re.S)
                block = Block(m[1] if m else "(closure)", (m[2] or "") if m else "", [])
                stack[-1].children.append(block)
                stack.append(block)
                head = ""
            elif ch == "}":
                if len(stack) == 1:
                    raise ValueError(f"unbalanced '}}' at offset {i}")
                stack.pop()
                head = ""
            elif ch == "\n":
                head += " " if head.strip() else ""
            else:
                head += ch
            i += 1
    if len(stack) != 1:
        raise ValueError(f"{len(stack) - 1} unclosed block(s): {stack[-1].name}")
    return root


def declarative_problems(root: Block) -> list[str]:
    """What makes this not a declarative pipeline of the shape the example promises."""
    problems = []
    pipelines = [b for b in root.children if b.name == "pipeline"]
    if len(pipelines) != 1 or len(root.children) != 1:
        return ["the file must hold one pipeline { } block"]
    directives = {
        *("agent", "triggers", "options", "environment", "stages"),
        *("post", "parameters", "tools"),
    }
    pipe = pipelines[0]
    names = [b.name for b in pipe.children]
    problems += [f"pipeline: unknown section {n}" for n in names if n not in directives]
    for needed in ("agent", "triggers", "options", "environment", "stages", "post"):
        if needed not in names:
            problems.append(f"pipeline: no {needed} section")
    for b in pipe.children:
        if b.name == "stages":
            for st in b.children:
                if st.name != "stage" or not re.fullmatch(r"\('[^']+'\)", st.args):
                    problems.append(f"stages: {st.name}{st.args} is not a stage('name')")
                elif [c.name for c in st.children] != ["steps"]:
                    problems.append(f"stage{st.args}: needs exactly one steps block")
        if b.name == "post":
            conditions = {"always", "success", "failure", "unstable", "changed", "cleanup"}
            problems += [
                f"post: unknown condition {c.name}" for c in b.children if c.name not in conditions
            ]
    return problems


def test_jenkinsfile_is_a_declarative_pipeline_of_the_promised_shape() -> None:
    text = JENKINS.read_text()
    assert declarative_problems(groovy_blocks(text)) == []
    cron = re.search(r"cron\('([^']+)'\)", text)
    assert cron
    assert len(cron[1].split()) == 5
    assert "disableConcurrentBuilds()" in text
    assert re.search(r"junit testResults: 'aibench-runs/junit\.xml'", text)
    assert re.search(r"archiveArtifacts artifacts: 'aibench-runs/\*\*'", text)
    post = groovy_blocks(text).children[0].children[-1]
    assert post.name == "post"
    assert [c.name for c in post.children] == ["always"]
    assert "script" in [c.name for c in post.children[0].children]


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (("        stage('Nightly suite') {", "        step('Nightly suite') {"), "not a stage"),
        (("    post {", "    finally {"), "unknown section finally"),
        (("            steps {\n", "            steps {{\n"), "unclosed"),
    ],
)
def test_the_jenkinsfile_reader_catches_a_broken_file(change: tuple[str, str], found: str) -> None:
    text = JENKINS.read_text()
    assert text.count(change[0]) == 1
    broken = text.replace(*change)
    try:
        problems = declarative_problems(groovy_blocks(broken))
    except ValueError as e:
        problems = [str(e)]
    assert any(found in p for p in problems), problems


def test_the_three_pipelines_run_the_same_command() -> None:
    wanted = '$AIBENCH run --suite "$AIBENCH_SUITE" --history "$AIBENCH_HISTORY"'
    for make in JOBS.values():
        job = make()
        assert any(wanted in " ".join(s.text.split()) for s in job.scripts), make
        assert job.env["AIBENCH_HISTORY"] == "/var/lib/aibench/history.sqlite"
        assert job.env["AIBENCH_OUT"] == "aibench-runs"
