"""redline's off-policy learner: SAC with a C51 clipped double-Q critic (FastSAC-style) on a TensorDict replay.

Imports no simulator code, so it runs under plain pytest. One concern per module: :mod:`.sac_config`, :mod:`.replay`
(ring buffer, n-step returns, partition-invariant sampling), :mod:`.networks`, :mod:`.sac_losses` (pure functions),
:mod:`.sac` (the learner) and :mod:`.rsl_rl_sac` (a drop-in for rsl_rl's stock ``OnPolicyRunner``).
"""

from redline.learning.sac.sac import SAC
from redline.learning.sac.sac_config import CLASS_PATH, SACActorConfig, SACConfig, SACCriticConfig

__all__ = ["CLASS_PATH", "SAC", "SACActorConfig", "SACConfig", "SACCriticConfig"]
