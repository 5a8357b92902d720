"""The one exception of the models library."""


class ModelError(RuntimeError):
    """A model step failed; the message names the input, the reason and the fix."""
