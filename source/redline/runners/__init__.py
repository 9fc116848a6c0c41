"""Runners: the loop around a learner (redline's or rsl_rl's) over an Isaac Lab env, with episode statistics."""
