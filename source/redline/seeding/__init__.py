"""Per-env seeding strategies: randomness as a pure function of (seed, global env id, episode, draw).

Pure torch (no simulator imports): the tasks and the learner both draw from it. See :mod:`.streams` for the
strategies and their guarantees, :mod:`.philox` for the counter-based generator.
"""

from redline.seeding.philox import fused_philox4x32, philox4x32, to_unit_float
from redline.seeding.streams import STRATEGIES, Domain, EnvStreams, Strategy, check_seed, parse_strategy

__all__ = [
    "STRATEGIES",
    "Domain",
    "EnvStreams",
    "Strategy",
    "check_seed",
    "fused_philox4x32",
    "parse_strategy",
    "philox4x32",
    "to_unit_float",
]
