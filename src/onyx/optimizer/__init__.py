"""Graph optimizer: passes, one per file, and levels mapping to ordered lists of passes."""

from onyx.optimizer.levels import optimize

__all__ = ["optimize"]
