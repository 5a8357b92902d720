"""The one exception the submission library raises for bad input: it names the input, the reason and the fix."""

from __future__ import annotations


class SubmissionError(ValueError):
    def __init__(self, what: str, reason: str, fix: str):
        self.what, self.reason, self.fix = what, reason, fix
        super().__init__(f"{what}: {reason}; fix: {fix}")
