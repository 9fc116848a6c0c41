"""Run folders and what goes in them: atomic checkpoints and the per-iteration metrics log."""
