"""Agent (learner) configurations for the cartpole task."""
