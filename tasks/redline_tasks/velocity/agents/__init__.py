"""Agent (learner) configurations for the velocity tasks."""
