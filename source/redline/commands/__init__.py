"""The ``redline`` commands' implementations: train, play, report (plots), video, export, torchrun launch."""
