"""MLPerf validity in the report, from real LoadGen and MLLOG outputs through the real runners.

``aibench run`` drives the MLPerf Inference and Training runners with a harness command
that copies captured logs (tests/fixtures/mlperf-*: LoadGen 6.0.17 summaries and detail
logs of a Python SUT, MLLOG files of a llama31_8b run logged with mlperf-logging 4.1.68)
where LoadGen or the training run would write them. Everything after that is the product's
own path: the runners collect the logs, parse them and run the real compliance checker;
the default spec judges; the report shows LoadGen's VALID / INVALID with the failing
constraint and the training runs with the checker's verdict and the score's validity.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from aibench.model import Run
from tests.aibench_cli import aibench, only_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUMMARY = FIXTURES / "mlperf-inference-summary"
DETAIL = FIXTURES / "mlperf-inference-detail"
TRAINING = FIXTURES / "mlperf-training"

INFERENCE_CASES = {  # step -> (scenario, captured log stem)
    "offline": ("Offline", "loadgen6_PySUT_Offline"),
    "offline-short": ("Offline", "loadgen6_PySUT_Offline_INVALID_min_duration"),
    "server-tokens": ("Server", "loadgen6_PySUT_Server_tokens_INVALID_early_stopping"),
}
# run k of the three-run training step copies this log
TRAINING_RUNS = (
    "mllog6_llama31_8b_valid.log",
    "mllog6_llama31_8b_aborted.log",
    "mllog6_llama31_8b_bad_opt.log",
)


@dataclass(frozen=True)
class Stored:
    run_dir: Path
    run: Run

    @property
    def html(self) -> str:
        return (self.run_dir / "report.html").read_text(encoding="utf-8")


def _suite(tmp: Path) -> Path:
    steps = []
    for step, (scenario, stem) in INFERENCE_CASES.items():
        src = tmp / "logs" / step
        src.mkdir(parents=True)
        shutil.copyfile(SUMMARY / f"{stem}_mlperf_log_summary.txt", src / "mlperf_log_summary.txt")
        shutil.copyfile(DETAIL / f"{stem}_mlperf_log_detail.txt", src / "mlperf_log_detail.txt")
        cmd = [
            "cp",
            str(src / "mlperf_log_summary.txt"),
            str(src / "mlperf_log_detail.txt"),
            "{output_dir}",
        ]
        steps.append(
            {
                "name": step,
                "tool": "mlperf-inference",
                "options": {"scenario": scenario, "command": cmd},
            }
        )
    train = tmp / "logs" / "train"
    train.mkdir()
    for k, name in enumerate(TRAINING_RUNS):
        shutil.copyfile(TRAINING / name, train / f"run_{k}.log")
    steps.append(
        {
            "name": "train",
            "tool": "mlperf-training",
            "options": {
                "benchmark": "llama31_8b",
                "runs": 3,
                "command": ["cp", str(train / "run_{run_index}.log"), "{log_dir}/result.txt"],
            },
        }
    )
    suite = {
        "schema_version": 1,
        "name": "mlperf-validity",
        "settings": {"workdir": str(tmp / "work")},
        "steps": steps,
    }
    path = tmp / "suite.yaml"
    path.write_text(json.dumps(suite), encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    tmp = tmp_path_factory.mktemp("mlperf")
    runs = tmp / "runs"
    res = aibench(
        "run", "--suite", str(_suite(tmp)), "--output-dir", str(runs), "--quiet", timeout=180
    )
    # the default spec checks fio and iperf3, which this suite does not run: MISSING
    assert res.returncode == 1, res.stderr
    run_dir, run = only_run(runs)
    return Stored(run_dir, run)


def _section(html: str, title: str) -> str:
    return html.split(f"<h2>{title} ")[1].split("</section>")[0]


def _rows(block: str, caption: str) -> list[list[str]]:
    table = block.split(f"<caption>{caption}")[1].split("</table>")[0]
    body = table.split("<tbody>")[1]
    return [re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S) for tr in body.split("<tr>")[1:]]


def test_the_runners_recorded_what_the_report_reads(stored: Stored) -> None:
    by_step = {s.step: s for s in stored.run.steps}
    facts = {f.name: f.value for f in by_step["offline-short"].facts}
    assert facts["result_validity"] == "INVALID"
    assert facts["failed_constraints"] == "min_duration_met"
    train = by_step["train"]
    assert train.status.value == "failed"  # run 2 fails compliance
    # no check of the spec reads MLPerf; the failed training step is judged all the same
    judged = [v for v in stored.run.verdicts if v.benchmark.startswith("mlperf")]
    assert [(v.origin, v.check, v.outcome.value) for v in judged] == [
        ("step", "step:train", "ERROR")
    ]
    assert "compliance" in judged[0].reason or "failed" in judged[0].reason


def test_inference_rows_say_valid_or_invalid_and_name_the_constraint(stored: Stored) -> None:
    sec = _section(stored.html, "MLPerf Inference")
    rows = {r[0]: r for r in _rows(sec, "Results per scenario")}
    assert set(rows) == {f"{s}/{stored.run.steps[0].nodes[0]}/r0" for s in INFERENCE_CASES}
    ok = next(r for k, r in rows.items() if k.startswith("offline/"))
    short = next(r for k, r in rows.items() if k.startswith("offline-short/"))
    server = next(r for k, r in rows.items() if k.startswith("server-tokens/"))
    assert ok[2:6] == ["Offline", "samples_per_second = 45790.4 samples/s", "✔ VALID", "—"]
    assert short[2:6] == [
        "Offline",
        "samples_per_second = 371943 samples/s",
        "✖ INVALID",
        "✖ min_duration_met",
    ]
    assert "Increase expected QPS" in short[6]
    assert server[2:6] == [
        "Server",
        "completed_tokens_per_second = 3019.61 tokens/s",
        "✖ INVALID",
        "✖ early_stopping_met",
    ]
    assert "Would need to run at least 269 more queries" in server[6]
    # the failing cells are highlighted, and say so in text as well
    assert '<td class="flag">✖ INVALID</td>' in sec
    assert '<td class="flag">✔ VALID</td>' not in sec
    assert "1 of 3 LoadGen runs VALID" in sec


def test_training_runs_show_times_compliance_and_the_checkers_reason(stored: Stored) -> None:
    sec = _section(stored.html, "MLPerf Training")
    runs = _rows(sec, "Runs: time to train")
    assert [r[2:6] for r in runs] == [
        ["0", "38 ms", "success", "✔ passed"],
        ["1", "36 ms", "✖ aborted", "✔ passed"],
        ["2", "39 ms", "success", "✖ failed"],
    ]
    assert (
        runs[2][6] == "CHECK for &#39;opt_name&#39; failed in line 10: failed test:  "
        "v[&#39;value&#39;] == &#39;adamw&#39;"
    )
    assert runs[0][6] == runs[1][6] == ""


def test_training_score_says_it_is_not_a_valid_mlperf_score_and_why(stored: Stored) -> None:
    sec = _section(stored.html, "MLPerf Training")
    (row,) = _rows(sec, "Benchmark results")
    _step, bench, runs, required, score, valid, why, checker = row
    assert (bench, runs, required) == ("llama31_8b", "3", "10")
    assert score == "(no score)"  # one run failed compliance: two times cannot be scored
    assert valid == "✖ not valid"
    assert why == "2 runs, the rules need 10"
    assert re.fullmatch(r"\d+\.\d+\.\d+", checker)
    assert "llama31_8b: 3 runs of the 10 the rules require; not a valid MLPerf score" in sec


def test_invalid_results_reach_the_first_screen_even_when_no_check_judges_them(
    stored: Stored,
) -> None:
    html = stored.html
    banner = html.split('id="signoff"')[0]
    assert "Not valid, and no check of the spec judges it: offline-short/" in banner
    assert "(and 1 more)" in banner  # the failed training step has a verdict of its own
    block = html.split('id="failures"')[1].split('id="checks"')[0]
    nv = block.split('id="not-valid"')[1].split("</div>")[0]
    assert nv.count("<li>") == 3
    assert "Offline: INVALID (min_duration_met not met)" in nv
    assert "Server: INVALID (early_stopping_met not met)" in nv
    assert "llama31_8b: not a valid MLPerf score (2 runs, the rules need 10)" in nv
    assert nv.count("no check of the spec judges it") == 2  # the step verdict covers train


def test_a_spec_that_judges_validity_covers_the_invalid_results(
    stored: Stored, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(stored.run_dir, run_dir)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "name": "mlperf-validity",
                "checks": [
                    {
                        "id": "inference-valid",
                        "fact": {"source": "mlperf-inference", "name": "result_validity"},
                        "op": "eq",
                        "value": "VALID",
                    },
                    {
                        "id": "training-score-valid",
                        "fact": {"source": "mlperf-training", "name": "score_valid"},
                        "op": "eq",
                        "value": True,
                    },
                ],
            }
        )
    )
    out = tmp_path / "rejudged"  # a judgement not stored: the run directory stays as it is
    res = aibench("report", str(run_dir), "--spec", str(spec), "--out", str(out), timeout=120)
    assert res.returncode == 1, res.stderr
    html = (out / "report.html").read_text()
    nv = html.split('id="not-valid"')[1].split("</div>")[0]
    assert nv.count("a failing check below covers it") == 3
    assert "no check of the spec judges it" not in nv
    assert "Not valid, and no check" not in html.split('id="signoff"')[0]


def test_the_ci_summary_lists_the_results_that_are_not_valid(stored: Stored) -> None:
    md = (stored.run_dir / "summary.md").read_text()
    block = md.split("### Results the tools call not valid (3)")[1].split("###")[0]
    assert "Offline: INVALID (min\\_duration\\_met not met)" in block
    assert block.count("no check of the spec judges it") == 2
