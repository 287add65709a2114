"""Question sets drafted from the documents when there is none written: candidate needles, the
drafter and its filters, and how far drafted figures follow written ones. Internal: `candidates`."""

__all__ = ["agreement", "drafter", "filters", "question_set"]
