"""What a checkpoint holds beyond the learner, so a resumed run continues as if never interrupted.

In data-flow order: :mod:`.sim_state` (the simulator's state by world) and :mod:`.env_state` (an Isaac Lab env's
buffers, managers and sensors, with each value's env layout as its owner declares it) are read from a live env;
:mod:`.parts` gathers them per rank with the episode statistics and :mod:`.generators`, and restores or regroups them
onto another process count by :mod:`.layout`; :mod:`.tree` is the one walk over their nested dicts. The simulator's
modules import Isaac Lab and Warp inside their functions only: the learner and runners import :mod:`.parts` (no
simulator code) and call the env's own ``env_state()``.
"""
