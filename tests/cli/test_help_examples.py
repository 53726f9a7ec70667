"""Every example line of ``aibench --help`` and of each command's ``--help`` is read by the
real argument parser, and the spec and suite names it gives are built-in ones: an example
a user copies must not fail on an option that does not exist or a profile never shipped."""

from __future__ import annotations

import shlex

import pytest

from aibench import cli
from aibench.commands import COMMANDS
from aibench.config import builtin_names, resolve


def example_lines(epilog: str) -> list[str]:
    """The indented ``aibench ...`` lines of an epilog (a line ending in a backslash
    continues on the next), without their trailing comments."""
    out: list[str] = []
    carry = ""
    for line in epilog.splitlines():
        text = line.strip()
        if carry:
            text, carry = f"{carry} {text}", ""
        elif not (line[:1].isspace() and text.startswith("aibench ")):
            continue
        if text.endswith("\\"):
            carry = text[:-1].strip()
            continue
        out.append(text.split("  #", 1)[0].split(" # ", 1)[0].strip())
    return out


def words_of(line: str) -> list[str]:
    """The arguments of an example, up to a shell pipe or redirection."""
    words = shlex.split(line)[1:]
    cut = [i for i, w in enumerate(words) if w in ("|", ">", ">>", "2>&1")]
    return words[: cut[0]] if cut else words


EXAMPLES = [
    line
    for epilog in [cli.EPILOG, *(c.epilog for c in sorted(COMMANDS, key=lambda c: c.name))]
    for line in example_lines(epilog or "")
]


def test_every_command_with_examples_is_read() -> None:
    assert len(EXAMPLES) >= 20
    named = {shlex.split(line)[1] for line in EXAMPLES}
    assert {"run", "report", "check", "spec", "compare"} <= named


@pytest.mark.parametrize("line", EXAMPLES)
def test_help_example_parses_and_names_built_ins(line: str) -> None:
    words = words_of(line)
    try:
        args = cli.build_parser(only=words[0]).parse_args(words)
    except SystemExit as exc:
        pytest.fail(f"{line!r}: the parser refused it (exit {exc.code})")
    for dest, kind in (("spec", "profiles"), ("suite", "suites")):
        value = getattr(args, dest, None)
        if isinstance(value, str) and "/" not in value and not value.endswith(".yaml"):
            assert value in builtin_names(kind), f"{line!r}: no built-in {dest} {value!r}"
            resolve(kind, value)


def test_a_wrong_example_is_caught() -> None:
    """The reading above can fail: a continued line is read whole, and a made-up profile
    name in it is not a built-in one."""
    epilog = "examples:\n  aibench report R --spec nightly \\\n      --out x   # a comment\n"
    (line,) = example_lines(epilog)
    assert line == "aibench report R --spec nightly --out x"
    args = cli.build_parser(only="report").parse_args(words_of(line))
    assert args.spec not in builtin_names("profiles")
