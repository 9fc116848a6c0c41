"""``redline bench``: benchmark commands whose output goes in ``docs/performance.md`` (not timed tests)."""
