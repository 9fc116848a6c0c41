"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class UserError(Exception):
    """Bad input from the user: the message names the field and the valid values.

    The CLI prints ``redline <command>: error: <message>`` and exits with status 2, without a traceback.
    """
