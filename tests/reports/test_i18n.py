"""The reports in Chinese (``lang="zh"``): the catalog covers every fixed string of the
reports, the catalog gettext loads is the committed ``.po``, a Chinese report and summary
leave no English fixed text (only names, units and what the run recorded), numbers are the
same as in the English report, and the command line takes ``--lang``."""

from __future__ import annotations

import html
import html.parser
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from aibench.reports import i18n
from tests.reports.conftest import Rendered

ROOT = Path(__file__).resolve().parents[2]
POT = ROOT / "aibench" / "locale" / "aibench.pot"
PO = ROOT / "aibench" / "locale" / "zh_CN" / "LC_MESSAGES" / "aibench.po"

# Words a Chinese report keeps in Latin letters on purpose: product, tool and standard names,
# abbreviations a cluster engineer uses as they are, units, the artefact and command names.
NAMES = frozenset(
    {
        *("aibench", "verify", "RUN_DIR", "sha256", "UTC", "ID", "stdout", "stderr"),
        *("LoadGen", "MLPerf", "mlperf-logging", "run_stop", "VALID", "INVALID"),
        *("NCCL", "fio", "iperf3", "iperf2", "perftest", "TCP", "UDP", "RDMA"),
        *("GPU", "CPU", "CUDA", "HCA", "ECC", "Xid", "DCGM", "THP", "vm.swappiness"),
        *("B", "KiB", "MiB", "GiB", "TiB", "K", "M", "G", "ms", "s", "min"),
    }
)
ARTEFACT = re.compile(r"\b[\w-]+(?:\.(?:html|xml|md|prom|json|sha256|sig))+\b")
HEX = re.compile(r"\b[0-9a-f]{16,}\b")
PLACEHOLDER = re.compile(r"\{\w+\}|%\(\w+\)[sd]")
WORD = re.compile(r"(?<![\w.])[A-Za-z][\w.+-]*[A-Za-z0-9_]|(?<![\w.])[A-Za-z](?![\w.])")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _catalog(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def _key(m: Message) -> tuple[str | None, str]:
    return (m.context, m.id[0] if isinstance(m.id, tuple | list) else m.id)


def _messages(cat: Catalog) -> dict[tuple[str | None, str], Message]:
    return {_key(m): m for m in cat if m.id}


class _Text(html.parser.HTMLParser):
    """The text a reader sees (SVG text included) and the attribute texts shown to them."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "script"):
            self.hidden += 1
        self.out += [v for k, v in attrs if k in ("placeholder", "title", "data-fmt") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self.hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.out.append(data)


def visible_text(page: str) -> list[str]:
    p = _Text()
    p.feed(page)
    return p.out


def words(text: str) -> Iterator[str]:
    text = PLACEHOLDER.sub(" ", HEX.sub(" ", ARTEFACT.sub(" ", text)))
    yield from WORD.findall(text)


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(x, list | tuple):
        for v in x:
            yield from _strings(v)
    elif x is not None:
        yield str(x)


def recorded_words(run_dir: Path) -> set[str]:
    """Every word of what the run recorded: run.json's values and the raw logs."""
    texts = list(_strings(json.loads((run_dir / "run.json").read_text(encoding="utf-8"))))
    reports = {"report.html", "summary.md", "junit.xml", "metrics.prom", "manifest.sha256"}
    texts += [
        p.read_text(errors="replace")
        for p in run_dir.rglob("*")
        if p.is_file() and p.name not in reports and p.name != "run.json"
    ]
    return {w for t in texts for w in words(t)}


def english_left(texts: list[str], run_dir: Path) -> dict[str, str]:
    """word -> the text it stands in, for each Latin word that is neither a name nor
    recorded by the run: fixed text that was not translated."""
    allowed = recorded_words(run_dir) | NAMES
    left: dict[str, str] = {}
    for t in texts:
        for w in words(t):
            if w not in allowed:
                left.setdefault(w, " ".join(t.split())[:100])
    return left


# ---- the catalog --------------------------------------------------------------------


def test_the_committed_pot_holds_every_marked_string(tmp_path: Path) -> None:
    """Extracting again (as ``make catalogs`` does) gives the committed template's strings."""
    fresh = tmp_path / "fresh.pot"
    argv = ["pybabel", "-q", "extract", "-F", str(ROOT / "babel.cfg"), "-k", "N_"]
    CommandLineInterface().run([*argv, "-o", str(fresh), str(ROOT)])
    got, committed = set(_messages(_catalog(fresh))), set(_messages(_catalog(POT)))
    assert got - committed == set(), "strings not in aibench.pot: run make catalogs"
    assert committed - got == set(), "aibench.pot holds strings no longer used: make catalogs"
    assert len(got) > 250


def test_every_msgid_is_translated_in_zh_cn() -> None:
    pot, po = _messages(_catalog(POT)), _catalog(PO)
    assert po.locale is not None
    assert (po.locale.language, po.locale.territory) == ("zh", "CN")
    translated = _messages(po)
    assert set(pot) - set(translated) == set(), "untranslated: run make catalogs, translate"
    assert set(translated) - set(pot) == set(), "obsolete entries in the .po"
    for key, m in translated.items():
        forms = list(m.string) if isinstance(m.string, tuple | list) else [m.string]
        assert all(f.strip() for f in forms), f"empty translation of {key}"
        assert not m.fuzzy, f"fuzzy translation of {key}"
        ids = m.id if isinstance(m.id, tuple | list) else (m.id,)
        wanted = set(PLACEHOLDER.findall(ids[-1]))
        for f in forms:
            assert set(PLACEHOLDER.findall(f)) == wanted, (key, f)
            if re.search(r"[A-Za-z]{3,}", PLACEHOLDER.sub("", ids[0])):
                assert re.search(r"[\u4e00-\u9fff]", f), f"{key} is not in Chinese: {f!r}"
    assert [(m.id, errs) for m, errs in po.check()] == []


def test_gettext_loads_the_committed_translation() -> None:
    """The compiled catalog in use (.mo from the build, or the .po compiled in memory) says
    what the committed .po says: a stale .mo would fail here."""
    t = i18n.translations("zh")
    for (ctx, _id), m in _messages(_catalog(PO)).items():
        if isinstance(m.id, tuple | list):
            for n in (1, 2):
                got = t.ngettext(m.id[0], m.id[1], n)
                assert got == m.string[0], m.id
        elif ctx:
            assert t.pgettext(ctx, m.id) == m.string
        else:
            assert t.gettext(m.id) == m.string


def test_the_po_compiles_in_memory_without_a_mo() -> None:
    raw = i18n.compile_po(PO)
    assert raw[:4] in (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")  # the gettext .mo magic
    import gettext
    import io

    t = gettext.GNUTranslations(io.BytesIO(raw))
    assert t.gettext("Acceptance report") == "验收报告"


def test_an_unknown_language_is_a_user_error() -> None:
    from aibench.errors import UserError

    with pytest.raises(UserError, match="unknown report language 'fr'; choose one of: en, zh"):
        i18n.check("fr")


# ---- the rendered reports -----------------------------------------------------------


def test_zh_report_has_no_english_fixed_text(rendered_zh: Rendered) -> None:
    page = rendered_zh.html
    assert '<html lang="zh-CN"' in page
    assert "验收报告" in page
    assert english_left(visible_text(page), rendered_zh.run_dir) == {}


def test_zh_summary_has_no_english_fixed_text(rendered_zh: Rendered) -> None:
    md = (rendered_zh.run_dir / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("## ✖ aibench acceptance: **失败**")
    assert english_left(html.unescape(md).splitlines(), rendered_zh.run_dir) == {}


def test_the_detector_finds_english_in_the_english_report(rendered: Rendered) -> None:
    """Control: the same check on the English report names its fixed text."""
    left = english_left(visible_text(rendered.html), rendered.run_dir)
    assert {"Acceptance", "Sign-off", "Failures", "Observed", "Environment"} <= set(left)
    md = html.unescape((rendered.run_dir / "summary.md").read_text(encoding="utf-8"))
    assert {"Failing", "checks", "Artefacts"} <= set(
        english_left(md.splitlines(), rendered.run_dir)
    )


def test_numbers_and_units_are_those_of_the_english_report(
    rendered: Rendered, rendered_zh: Rendered
) -> None:
    en, zh = rendered.html, rendered_zh.html
    # every verdict row: outcome, check, expected bound, observed value (number and unit)
    row = re.compile(
        r'<tr data-outcome="(\w+)"><td[^>]*>[^<]*</td><td>([^<]*)<.*?'
        r'<td>([^<]*)</td><td data-v="([^"]*)">([^<]*)</td>',
        re.S,
    )
    rows_en, rows_zh = row.findall(en), row.findall(zh)
    assert len(rows_en) == len(rendered.gen.run.verdicts)
    observed = [r for r in rows_en if r[3]]
    assert observed
    assert observed == [r for r in rows_zh if r[3]]
    # and every number on the page, plots included
    count_en = Counter(NUMBER.findall(" ".join(visible_text(en))))
    count_zh = Counter(NUMBER.findall(" ".join(visible_text(zh))))
    assert count_en == count_zh
    md_en = (rendered.run_dir / "summary.md").read_text(encoding="utf-8")
    md_zh = (rendered_zh.run_dir / "summary.md").read_text(encoding="utf-8")
    assert Counter(NUMBER.findall(md_en)) == Counter(NUMBER.findall(md_zh))
    for unit in ("MB/s", "Gbit/s", "GB/s", "samples/s"):
        assert md_en.count(unit) == md_zh.count(unit) > 0


def test_the_machine_readable_twins_stay_english(rendered: Rendered, rendered_zh: Rendered) -> None:
    for name in ("junit.xml", "metrics.prom"):
        assert (rendered_zh.run_dir / name).read_bytes() == (rendered.run_dir / name).read_bytes()


# ---- the command line ---------------------------------------------------------------


def test_report_command_rerenders_in_chinese_and_back(rendered: Rendered, tmp_path: Path) -> None:
    import shutil

    from tests.aibench_cli import aibench

    run_dir = tmp_path / "run"
    shutil.copytree(rendered.run_dir, run_dir)
    proc = aibench("report", str(run_dir), "--lang", "zh")
    assert proc.returncode == 1, proc.stderr  # the run has failing checks
    assert '<html lang="zh-CN"' in (run_dir / "report.html").read_text(encoding="utf-8")
    assert "**失败**" in (run_dir / "summary.md").read_text(encoding="utf-8")
    proc = aibench("report", str(run_dir))
    assert proc.returncode == 1, proc.stderr
    assert '<html lang="en"' in (run_dir / "report.html").read_text(encoding="utf-8")
    bad = aibench("report", str(run_dir), "--lang", "fr")
    assert bad.returncode == 2
    assert "invalid choice: 'fr'" in bad.stderr


def test_suite_setting_lang_is_checked() -> None:
    from aibench.suite import Settings

    assert Settings().lang == "en"
    assert Settings(lang="zh").lang == "zh"
    with pytest.raises(ValueError, match="lang"):
        Settings(lang="fr")  # type: ignore[arg-type]


def test_zh_report_escapes_planted_payloads(tmp_path: Path) -> None:
    """The translated strings with values in them (waiver dates, counts, names) escape
    those values as the English report does."""
    from tests.reports.conftest import _render

    hostile = _render(tmp_path, 6, hostile=True, beacon="http://127.0.0.1:9/leak.png", lang="zh")
    page = hostile.html
    assert "<script>document.title" not in page
    assert 'onerror="' not in page
    assert page.count("<script") == 1
    assert not re.search(r'(?:src|href)\s*=\s*["\']?\s*(?:https?:|//)', page, re.I)
    assert "<script" not in (hostile.run_dir / "summary.md").read_text(encoding="utf-8")
