"""redline's registered Isaac Lab tasks (``Redline-*``, each with a ``-Play`` twin).

Importing this package registers the tasks with gymnasium. It is light (string entry points only), and
Isaac Lab imports it through the ``isaaclab.tasks`` entry-point group, so ``isaaclab list_envs`` and
``isaaclab train`` find the tasks too. That import also offers ``physics=mujoco_cpu`` on every other Isaac Lab task
(:mod:`redline.physics.any_task`).
"""

from redline.physics.any_task import install

from . import ant, cartpole, velocity  # noqa: F401  (registers the tasks)

install()

TASK_PREFIX = "Redline-"
"""Every redline task id starts with this."""
