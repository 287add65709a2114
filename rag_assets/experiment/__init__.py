"""Experiments a team declares in one file: the arms it chooses between (`spec`), made real (`arms`),
each configuration measured through the lab's own engine (`measure`) and all of them ranked
(`leaderboard`)."""

__all__ = ["arms", "leaderboard", "measure", "spec"]
