"""What a run shows and hands on: video of the simulation (play, training clips) and the exported policy."""
