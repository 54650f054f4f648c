"""The exception types for bad input.

Everything a user can get wrong (a missing file, a malformed vocab line, an unknown id) is raised
as :class:`WorkbenchError` with a message written for that user: it names the file, field or line
and says what to do. The CLI and the window show ``str(error)`` as one line, never a traceback.

A wrong *setting* of a training run is a :class:`ConfigError`: it carries the name of the
:class:`~workbench.tasks.spec.RunSpec` field it is about, so each front end can point at its own
control for it — the CLI names its flag, the window focuses and marks the form widget. Its message
therefore speaks of the setting ("the vocabulary size …"), never of a flag or a widget.
"""


class WorkbenchError(Exception):
    """Bad input or an impossible request, explained for the user."""


class UnreadableText(WorkbenchError):
    """A corpus file whose bytes do not decode as the encoding it is read with.

    ``path`` is the file; ``encoding`` the encoding to read it with instead, when one can be
    guessed (a byte-order mark, a legacy code page), else None — so the window can offer it
    without parsing the message.
    """

    def __init__(self, message: str, *, path: str = "", encoding: str | None = None):
        super().__init__(message)
        self.path = path
        self.encoding = encoding

    def __reduce__(self):  # scans run in worker processes: the error crosses a pickle
        return (self.__class__, (str(self),), {"path": self.path, "encoding": self.encoding})


class BadRecord(WorkbenchError):
    """One record of a corpus file (a JSONL line, a CSV row, a counts line) that cannot be read;
    the ``skip`` bad-record policy leaves such records out, so the window offers it for these."""


class ConfigError(WorkbenchError):
    """A run setting that cannot be used; ``field`` names the RunSpec field it is about.

    ``field`` is a RunSpec field name (``"vocab_size"``, ``"pretokenizer"`` …), ``"files"`` or
    ``"files.<option>"`` for a corpus file's reader option (``"files.encoding"``), or
    ``"options.<name>"`` for a model-specific option. ``str(error)`` is the message alone.
    """

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class DamagedValue(WorkbenchError):
    """A value read from a project file that does not have the type or range the workbench writes:
    the file was edited outside the workbench (or damaged). ``owner`` names the run or reference
    (``"run 3 (bpe v1)"``), ``column`` the table column it was read from; the rest of the project
    stays usable, so a listing marks the owner instead of failing as a whole."""

    def __init__(self, owner: str, column: str, problem: str):
        rest = "the other runs are usable" if owner.startswith("run ") else "the rest of the project is usable"
        super().__init__(f"{owner}: column {column} {problem} — the project was edited outside the "
                         f"workbench; {rest}")
        self.owner = owner
        self.column = column
        self.problem = problem

    def __reduce__(self):
        return (self.__class__, (self.owner, self.column, self.problem))
