"""Experiments a team declares in one file: the arms it chooses between (`spec`), made real (`arms`),
each configuration measured (`evaluate`) and all of them ranked (`leaderboard`)."""

__all__ = ["arms", "evaluate", "leaderboard", "spec"]
