"""Isaac Lab environments seen from redline: the task registry, one config preparation, the simulator launch."""
