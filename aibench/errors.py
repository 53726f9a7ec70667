"""The two kinds of error aibench knows, and the exit codes they map to.

A *user error* (bad input, a missing file, an impossible request) is printed as one line
with a hint and ends the program with a documented exit code; a bug is anything else and
keeps its traceback. Tool output problems are a third family: they never end the program,
they are recorded on the step that produced the output.
"""

from __future__ import annotations

# Exit codes (documented in the README and in `aibench --help`).
EXIT_OK = 0  # every check PASS, WARN or WAIVED
EXIT_CHECKS_FAILED = 1  # at least one check FAIL, MISSING or ERROR
EXIT_USAGE = 2  # usage or configuration error
EXIT_CANNOT_RUN = 3  # nothing could run at all (no reachable node, no tool ...)
EXIT_ALTERED = 4  # a run directory does not match its manifest, or holds a link
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C; what was measured is on disk
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (aibench plan | head): 128 + SIGPIPE


class UserError(Exception):
    """An error the user can fix; printed as one line, never with a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} (hint: {self.hint})"
        return self.message


class ConfigError(UserError):
    """An input file (suite, spec, inventory) is malformed.

    ``file`` and ``key`` are kept apart so that tests and callers can check them; the
    message reads ``FILE: KEY: what is wrong``.
    """

    def __init__(self, file: str, key: str, problem: str, hint: str | None = None) -> None:
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {problem}", hint)
        self.file = file
        self.key = key
        self.problem = problem


class CannotRunError(UserError):
    """Nothing could be run: no node reachable, no tool installed anywhere."""

    exit_code = EXIT_CANNOT_RUN


class OutputError(Exception):
    """Base of the errors raised while reading a tool's output."""

    def __init__(self, tool: str, reason: str, line: int | None = None) -> None:
        self.tool = tool
        self.reason = reason
        self.line = line
        where = f" line {line}" if line is not None else ""
        super().__init__(f"{tool}{where}: {reason}")


class ParseError(OutputError):
    """The output could not be read: a number is missing, the JSON is cut, a column moved.

    Never coerced to 0 or to a silent skip: "measured 0 GB/s" and "could not read the
    number" stay different things.
    """


class ToolFailure(OutputError):
    """The output was read, and the tool itself reports that it failed.

    ``message`` is the tool's own words. ``partial`` holds whatever measurements the tool
    produced before it failed (kept as evidence; a failed step never passes a check).
    """

    def __init__(
        self,
        tool: str,
        reason: str,
        line: int | None = None,
        partial: list[object] | None = None,
    ) -> None:
        super().__init__(tool, reason, line)
        self.partial = list(partial or [])
