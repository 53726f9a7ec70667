"""Report languages: the fixed text of report.html and summary.md through gettext.

Languages are :data:`LANGUAGES`: ``en`` (the English source strings themselves) and ``zh``
(Simplified Chinese, locale ``zh_CN``). Only fixed text is translated; numbers, units,
check and metric names, node names and everything read from ``run.json`` (verdict reasons,
spec descriptions, tool messages) are shown as they were recorded.

Catalogs: ``aibench/locale/aibench.pot`` is extracted by Babel (``make catalogs``, see
``babel.cfg``); ``aibench/locale/<locale>/LC_MESSAGES/aibench.po`` is the translation,
kept in the source tree; ``aibench.mo`` beside it is compiled from the ``.po`` by Babel
when the package is built (``setup.py``: ``pip install .``, wheels and editable installs).
Where no ``.mo`` is present (a source tree used without installing) and Babel is
importable, the ``.po`` is compiled in memory when a report is rendered.

Renderers call :func:`_` and :func:`ngettext`; the language in force is set for the
current context by :func:`use` (a context variable, so concurrent renders do not mix).
"""

from __future__ import annotations

import contextvars
import gettext
import io
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from aibench.errors import UserError

DOMAIN = "aibench"
LANGUAGES = {"en": "en", "zh": "zh_CN"}  # --lang value -> gettext locale
HTML_LANG = {"en": "en", "zh": "zh-CN"}
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"

_current: contextvars.ContextVar[gettext.NullTranslations | None] = contextvars.ContextVar(
    "aibench_report_translations", default=None
)
_SOURCE = gettext.NullTranslations()  # English: the msgids themselves


def check(lang: str) -> str:
    """``lang`` if it is a report language, else a UserError listing them."""
    if lang not in LANGUAGES:
        raise UserError(f"unknown report language {lang!r}; choose one of: {', '.join(LANGUAGES)}")
    return lang


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The catalog of ``lang`` (``en``: the source strings)."""
    check(lang)
    if lang == "en":
        return _SOURCE
    folder = LOCALE_DIR / LANGUAGES[lang] / "LC_MESSAGES"
    mo = folder / f"{DOMAIN}.mo"
    if mo.is_file():
        with mo.open("rb") as f:
            return gettext.GNUTranslations(f)
    return gettext.GNUTranslations(io.BytesIO(compile_po(folder / f"{DOMAIN}.po")))


def compile_po(po: Path) -> bytes:
    """The ``.mo`` bytes of a ``.po`` file, compiled by Babel (fuzzy entries left out)."""
    try:
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po
    except ImportError:
        raise UserError(
            f"{po.with_suffix('.mo')}: the compiled catalog is missing and Babel is not "
            "installed to compile it; reinstall aibench (pip install .) or run make catalogs"
        ) from None
    with po.open("rb") as f:
        catalog = read_po(f)
    buf = io.BytesIO()
    write_mo(buf, catalog, use_fuzzy=False)
    return buf.getvalue()


@contextmanager
def use(lang: str) -> Iterator[gettext.NullTranslations]:
    """Render with ``lang`` inside the ``with`` block."""
    t = translations(check(lang))
    token = _current.set(t)
    try:
        yield t
    finally:
        _current.reset(token)


def _now() -> gettext.NullTranslations:
    return _current.get() or _SOURCE


def current_lang() -> str:
    t = _now()
    for lang in LANGUAGES:
        if translations(lang) is t:
            return lang
    return "en"


def _(message: str) -> str:
    return _now().gettext(message)


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it (translated where shown)."""
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    return _now().ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    return _now().pgettext(context, message)
