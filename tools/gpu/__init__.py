"""The bare GPU machine: the simulator's bundle in parts (``python -m tools.gpu.bundle``) and the check that runs
there (``python -m tools.gpu.gpu_sim``, driven by ``scripts/gpu_sim_check.sh``); docs/gpu.md."""
