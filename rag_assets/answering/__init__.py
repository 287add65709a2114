"""The ask path: the refusal gate, the context budget, the answerers (extractive and generated,
local or through an endpoint) with their citation and support checks, an optional judge, and
answer scoring. Internal: `reading`, `answerability`, `citations`, `extractive`, `short_answer`, `support`,
`support_words`."""

__all__ = ["answerer", "endpoint", "generation", "judge", "output_cache", "refusal", "scoring"]
