"""trustmh: trust in language models for mental-health conversations, and trust in their judges."""

__version__ = "0.1.0"
