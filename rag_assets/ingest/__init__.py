"""The lowest floor: documents in, text and questions out. Reading a folder (or a SQuAD or BEIR
import) into the native dataset, extracting every document with nothing lost, access lists,
languages, and validated questions with their needles. `staging` is internal."""

__all__ = [
    "access",
    "beir",
    "corpus",
    "dataset",
    "extractors",
    "ground_truth",
    "language",
    "locators",
    "sentences",
    "snapshot",
    "squad",
]
