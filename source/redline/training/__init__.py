"""Training, playing and logging glue between Isaac Lab environments and the learners."""
