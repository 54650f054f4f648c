"""The one exception type for bad input.

Everything a user can get wrong (a missing file, a malformed vocab line, an unknown id) is raised
as :class:`WorkbenchError` with a message written for that user: it names the file, field or line
and says what to do. The CLI and the window show ``str(error)`` as one line, never a traceback.
"""


class WorkbenchError(Exception):
    """Bad input or an impossible request, explained for the user."""
