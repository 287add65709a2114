"""The ask path: the refusal gate, the context budget, the answerers (extractive and generated,
local or through an endpoint) with their citation and support checks, and answer scoring.
Internal: `citations`, `extractive`, `support`."""

__all__ = ["answerer", "endpoint", "generation", "output_cache", "refusal", "scoring"]
