"""The ``redline`` commands' implementations: train (and its resume plan), play, report (plots), torchrun's process
group."""
