"""Numbered sources for a prompt, and the server-side citations behind them.

The model writes [1], [2]; it never writes a link or a document name. The server maps each
number to the chunk it came from and attaches the document, a locator label and a fragment
(`#char=start,end`, RFC 5147, into the document's canonical text). The quote is the chunk's
own `content`, never the embedded `text` (which may carry a header or an overlap tail that
is not at that place in the document). A number that points at no source is reported and
never shown as a citation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields

from rag_assets.ingest.locators import describe

_MARKER = re.compile(r"\[(\d+)\]")


def strip_markers(text: str) -> str:
    """The text without its `[n]` markers."""
    return " ".join(_MARKER.sub(" ", text).split())


NO_ANSWER = "NO ANSWER"
PROMPT = (
    "Answer the question in one short sentence using ONLY the numbered sources below. Cite the source as [n].\n"
    "If the sources do not contain the answer, reply only: " + NO_ANSWER + "\n\n"
    "SOURCES\n{sources}\n\nQUESTION\n{question}"
)


# what a refusal may add about itself ("NO ANSWER. The sources do not say."): words of the sources
# and the exchange, and of not knowing; any other word, a number or a citation makes it an answer
ABOUT_THE_SOURCES = frozenset(
    "the a an this these sources source documents document passages passage context text information "
    "provided given above do does did not no say says said state states mention mentions contain contains "
    "answer question it is are there enough any about that which i cannot can know found available".split()
)


def declines(reply: str) -> bool:
    """The reply is NO ANSWER and nothing else (markers, punctuation and case aside), or NO ANSWER
    followed only by words saying the sources do not tell: a reply that says NO ANSWER and anything
    more (a number, a citation, another word) is an answer, checked and scored as one."""
    words = re.sub(r"[\W_]+", " ", _MARKER.sub(" ", reply)).strip().upper()
    if words == NO_ANSWER:
        return True
    if not words.startswith(NO_ANSWER + " "):
        return False
    rest = reply[reply.upper().index("ANSWER") + len("ANSWER") :]
    return not _MARKER.search(rest) and set(re.findall(r"\w+", rest.casefold())) <= ABOUT_THE_SOURCES


_WORD_END = re.compile(r"\S(?=\s|$)")
# A chunk is read at most this many characters per budget token deep, so a whole document as one
# chunk costs what the budget allows, not its length. Natural text runs about 4 characters a token.
MAX_CHARS_PER_TOKEN = 16


@dataclass(frozen=True)
class Citation:
    index: int
    chunk_id: str
    document_id: str
    document_name: str
    locator_label: str
    fragment: str
    quote: str
    cosine_distance: float
    locator: str | None = None  # #page=N, #t=a,b or sheet!A1:D5 in the original file; None for plain text
    truncated: bool = False  # the quote is a prefix of the chunk: the input budget ran out inside it
    language: str | None = None  # its document's language, as the snapshot identified it (None: not known)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # plain values: no deep copy


@dataclass(frozen=True)
class Context:
    prompt: str
    citations: list[Citation]
    omitted: list[str] = field(default_factory=list)  # chunk ids retrieved but left out for the budget


def locator_label(title: str, section: str, locator: str | None = None) -> str:
    """document > section > page 3 (or time span, or cell range), the parts that exist and
    differ (a PDF's sections are its pages)."""
    where = describe(locator)
    return " > ".join(
        p for p in (title, section, where if (where or "").lower() != (section or "").lower() else None) if p
    )


def _citation(index: int, hit: dict, length: int | None = None) -> Citation:
    content = hit["content"] if length is None else hit["content"][:length]
    locator = hit["locator"] if isinstance(hit["locator"], str) else None  # plain text: None (NaN from Parquet)
    return Citation(
        index=index,
        chunk_id=hit["chunk_id"],
        document_id=hit["document_id"],
        document_name=hit["title"],
        locator_label=locator_label(hit["title"], hit["section"], locator),
        fragment=f"#char={hit['start']},{hit['start'] + len(content)}",
        quote=content,
        cosine_distance=float(hit["cosine_distance"]),
        locator=locator,
        truncated=length is not None,
        language=hit.get("language") if isinstance(hit.get("language"), str) else None,
    )


def _prompt(question: str, citations: list[Citation]) -> str:
    sources = "\n\n".join(f"[{c.index}] {c.document_name} - {c.locator_label}\n{c.quote}" for c in citations)
    return PROMPT.format(sources=sources, question=question)


def build_context(
    question: str, hits: list[dict], count_tokens: Callable[[str], int] | None = None, budget: int | None = None
) -> Context:
    """Numbered sources and the prompt. `hits`: retrieved chunks in rank order, each with
    chunk_id, document_id, title, section, start, end, content, locator and cosine_distance.

    With a token budget (`count_tokens` measures the whole prompt as the model reads it):
    whole chunks while they fit; the first one that does not is cut at the last word that
    fits (its quote and fragment cover exactly what the model saw), and later ones are omitted.
    The cost is bounded by the budget: no chunk is read past `budget × MAX_CHARS_PER_TOKEN`
    characters, whatever its length."""
    if budget is not None and count_tokens(_prompt(question, [])) > budget:
        raise ValueError(f"the question alone exceeds the input budget of {budget} tokens")
    citations: list[Citation] = []
    reach = None if budget is None else budget * MAX_CHARS_PER_TOKEN
    for position, hit in enumerate(hits):
        whole = _citation(len(citations) + 1, hit)
        if budget is None or (
            len(hit["content"]) <= reach and count_tokens(_prompt(question, [*citations, whole])) <= budget
        ):
            citations.append(whole)
            continue
        # word ends within reach (the one character past it tells whether the last is a word's end)
        cuts = [m.end() for m in _WORD_END.finditer(hit["content"][: reach + 1]) if m.end() <= reach]
        low, high = 0, len(cuts)  # the longest prefix of whole words that fits
        while low < high:
            mid = (low + high + 1) // 2
            fits = (
                count_tokens(_prompt(question, [*citations, _citation(len(citations) + 1, hit, cuts[mid - 1])]))
                <= budget
            )
            low, high = (mid, high) if fits else (low, mid - 1)
        if low:
            citations.append(_citation(len(citations) + 1, hit, cuts[low - 1]))
            position += 1
        return Context(_prompt(question, citations), citations, [h["chunk_id"] for h in hits[position:]])
    return Context(_prompt(question, citations), citations)


def check_citations(answer: str, citations: list[Citation]) -> tuple[list[Citation], list[int]]:
    """(citations the answer actually uses, in first-use order; numbers that point nowhere)."""
    by_index = {c.index: c for c in citations}
    used, dangling = [], []
    for number in dict.fromkeys(int(m) for m in _MARKER.findall(answer)):
        if number in by_index:
            used.append(by_index[number])
        else:
            dangling.append(number)
    return used, dangling


def fragment_range(fragment: str) -> tuple[int, int]:
    """(start, end) of a `#char=start,end` fragment."""
    m = re.fullmatch(r"#char=(\d+),(\d+)", fragment)
    if not m:
        raise ValueError(f"not a #char= fragment: {fragment!r}")
    return int(m.group(1)), int(m.group(2))
