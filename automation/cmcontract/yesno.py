"""Yes/no values of env names and inputs, with CM's words: yes/on/true/1 and no/off/false/0 (case
and surrounding blanks aside; an empty or missing value is no)."""
from __future__ import annotations

from typing import Optional

YES = frozenset({"yes", "on", "true", "1"})
NO = frozenset({"no", "off", "false", "0", ""})


class YesNoError(ValueError):
    """A value that is neither yes nor no: names the input, the value and the words accepted."""


def is_yes(value: Optional[object]) -> bool:
    """True for a yes word; anything else (no, empty, missing, other text) is False."""
    return value is not None and str(value).strip().lower() in YES


def parse_yes_no(name: str, value: Optional[object], default: bool = False) -> bool:
    """The flag `name` = `value`: `default` when missing, else a yes or a no word; any other text
    is refused (a typo such as `ture` must not mean no)."""
    if value is None:
        return default
    text = str(value).strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    raise YesNoError(f"{name}={value!r} is not a yes/no value; use yes or no")


def yes_no(flag: bool) -> str:
    """The env value of a flag: 'yes' or 'no'."""
    return "yes" if flag else "no"
