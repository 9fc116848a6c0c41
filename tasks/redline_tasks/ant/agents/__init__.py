"""Agent (learner) configurations for the ant task."""
