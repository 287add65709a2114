"""Experiments a team declares in one file: the arms it chooses between (`spec`), made real (`arms`),
each configuration measured through the lab's own engine (`measure`), all of them ranked
(`leaderboard`), the one `rag-assets use` chose served from what its run measured (`served`), and
what a run will cost, sampled on this machine (`estimate`)."""

__all__ = ["arms", "estimate", "leaderboard", "measure", "served", "spec"]
