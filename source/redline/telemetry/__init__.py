"""Where time goes: the FLOP/MFU model and bottleneck verdict, the GPU utilisation sampler, the profiler."""
