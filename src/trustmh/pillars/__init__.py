"""pillars."""
