"""Tools for other machines, run from a checkout and not installed with redline (the wheel holds ``source/redline``
and ``tasks/redline_tasks`` only)."""
