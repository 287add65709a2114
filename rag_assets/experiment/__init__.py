"""Experiments a team declares in one file: the arms it chooses between (`spec`), made real (`arms`),
each configuration measured through the lab's own engine (`measure`), all of them ranked
(`leaderboard`), and the one `rag-assets use` chose served from what its run measured (`served`)."""

__all__ = ["arms", "leaderboard", "measure", "served", "spec"]
