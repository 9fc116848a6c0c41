"""The exceptions the CLI turns into a one-line message and a non-zero exit (never a traceback)."""


class ExpectedExit(Exception):
    """An expected end of a command: the CLI prints its message on one line, without a traceback, and exits non-zero.

    Context managers between the command and the CLI (Isaac Lab's launcher prints a traceback for any exception it
    sees) let these pass untouched: :func:`redline.envs.launch.isaaclab_env`.
    """


class UserError(ExpectedExit):
    """Bad input from the user: the message names the field and the valid values.

    The CLI prints ``redline <command>: error: <message>`` and exits with status 2, without a traceback.
    """
