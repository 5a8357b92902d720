"""One exception tree for the engine.

Every error a user can cause or meet is an ``EngineError`` with a message that names the input,
the reason and the fix. The CLI adapter turns these into ``{'return': code, 'error': text}``
without a traceback; anything else is a bug in the engine and keeps its traceback.
"""
from __future__ import annotations

from typing import Iterable, Optional


class EngineError(Exception):
    """Base class: ``str(err)`` is the full user-facing message."""

    exit_code = 1

    def __init__(self, message: str, hint: str = ""):
        self.message = message
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        return self.message + (f"\n{self.hint}" if self.hint else "")


class ManifestError(EngineError):
    """A `_cm.yaml` that cannot be used: names the file, line and key."""

    def __init__(self, path: str, message: str, line: Optional[int] = None,
                 key: Optional[str] = None, hint: str = "", names: tuple[str, ...] = ()):
        self.path = path
        self.line = line
        self.key = key
        self.reason = message
        self.names = names    # the alias and tags it could still be read to have, for lookups
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}", hint)

    def __reduce__(self):
        # the registry's memo pickles these; Exception's default rebuilds from str(self) alone
        return (type(self), (self.path, self.reason, self.line, self.key, self.hint, self.names))


class InputError(EngineError):
    """A bad command-line input (unknown key, bad value, missing value)."""

    exit_code = 2


class ScriptNotFound(EngineError):
    exit_code = 16


class AmbiguousScript(EngineError):
    exit_code = 2


class VariationError(EngineError):
    exit_code = 2


class CycleError(EngineError):
    def __init__(self, chain: list[str]):
        self.chain = chain
        super().__init__("dependency cycle: " + " -> ".join(chain),
                         "Remove one of these dependencies, or guard it with enable_if_env/skip_if_env.")


class HookError(EngineError):
    """An exception raised, or an error returned, by a script's customize.py."""


class ScriptFailed(EngineError):
    """A native script (run.sh) that exited non-zero or was killed."""

    def __init__(self, script: str, command: str, returncode: int, log_path: str,
                 tail: str, rerun: str):
        self.script = script
        self.returncode = returncode
        self.log_path = log_path
        status = describe_exit(returncode)
        msg = (f"script '{script}' failed: {command} {status}\n"
               f"log: {log_path}\n"
               f"--- last lines of the log ---\n{tail.rstrip()}\n-----------------------------")
        super().__init__(msg, f"Rerun just this step with:\n  {rerun}")


def describe_exit(returncode: int) -> str:
    """'exited with code 137' or 'was killed by signal SIGKILL' (never a raw wait status)."""
    import signal  # only when a step failed: its enum costs every `cm` command otherwise
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    if returncode > 128:
        try:
            name = signal.Signals(returncode - 128).name
            return f"exited with code {returncode} (a shell's way of saying {name})"
        except ValueError:
            pass
    return f"exited with code {returncode}"


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """' Did you mean: a, b?' or '' when nothing is close."""
    import difflib  # only when a message needs it: it is slow to import

    close = difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.6)
    return f" Did you mean: {', '.join(close)}?" if close else ""
