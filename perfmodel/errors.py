"""User-facing errors: one line, naming the file/field/flag and what is allowed. The CLI prints them and exits 2."""


class PerfmodelError(ValueError):
    """A problem with the user's input or request, explained in one line."""


class InfeasibleLayout(PerfmodelError):
    """A parallel layout that breaks a validity rule (the message names the rule)."""
