"""The answer that answers: the question read for the kind of answer it asks and its terms, the
sentence chosen by them (a neighbour taken in when only it holds the asked kind), the short answer
with its own fragment, and NO ANSWER with the reason when the kept sources cannot answer."""

from rag_assets.answering.answerability import read_against
from rag_assets.answering.answerer import Answerer
from rag_assets.answering.citations import fragment_range
from rag_assets.answering.extractive import Extractive
from rag_assets.answering.reading import read_question
from rag_assets.answering.short_answer import short_answer

WANKEL = (
    "Other components are often present; pumps (such as an injector) to supply water to the boiler during "
    "operation, condensers to recirculate the water and recover the latent heat of vaporisation. "
    "It has been suggested that a pistonless rotary engine such as the Wankel engine could be used."
)


def _short(question: str, text: str, language: str = "en") -> str | None:
    read = read_question(question, language)
    span = short_answer(read, text)
    return None if span is None else text[span[0] : span[1]]


def test_the_kind_asked_for_is_read_in_five_languages():
    for question, language, kind in [
        ("When was the Duchy of Normandy founded?", "en", "date"),
        ("In what year did the storm hit the fleet?", "en", "date"),
        ("How many members does the Parliament have?", "en", "number"),
        ("Who ruled the duchy of Normandy?", "en", "person"),
        ("In what country is Normandy located?", "en", "place"),
        ("What is an example of a rotary engine without pistons?", "en", None),
        ("Wann wurde die Stadt gegründet?", "de", "date"),
        ("Wie viele Mitglieder hat das Parlament?", "de", "number"),
        ("Кога е основана държавата?", "bg", "date"),
        ("Колко члена има парламентът?", "bg", "number"),
        ("Сколько членов в парламенте?", "ru", "number"),
        ("Где находится город?", "ru", "place"),
        ("Πότε ιδρύθηκε η πόλη;", "el", "date"),
        ("Πόσα μέλη έχει η Βουλή;", "el", "number"),
    ]:
        assert read_question(question, language).asked == kind, question


def test_question_words_match_through_stems_and_compounds():
    read = read_question("What is an example of a rotary engine without pistons?", "en")
    assert {t.text for t in read.terms} == {"rotary", "engine", "pistons"}
    assert _short("What is an example of a rotary engine without pistons?", WANKEL) == "Wankel"


def test_the_short_answer_is_of_the_kind_asked_and_never_the_questions_own_words():
    normans = "The Normans gave their name to Normandy, a region in France."
    assert _short("In what country is Normandy located?", normans) == "France"
    assert _short("When was the duchy founded?", "The duchy was founded by treaty on 12 August 911.") == "12 August 911"
    assert _short("How many people live there?", "About 3 million people live in the city.") == "3 million"
    assert _short("Wann wurde die Stadt gegründet?", "Die Stadt wurde im Jahr 1242 gegründet.", "de") == "1242"
    assert _short("Сколько членов в парламенте?", "В парламенте 450 депутатов.", "ru") == "450"
    # the only year there is the question's own: no date answers it
    assert _short("What happened in 1066?", "In 1066 the Normans crossed the channel.") != "1066"


def test_the_extractive_answer_takes_in_the_neighbour_that_holds_the_asked_kind(pump):
    snap, chunks, index, embedder = pump
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=2.0)
    texts = dict(zip(snap["document_id"], snap["text"]))
    answer = answerer.ask("How long does the warranty cover?")
    (cited,) = answer.citations
    start, end = fragment_range(cited.fragment)
    assert cited.quote == texts[cited.document_id][start:end]
    assert answer.asked == "number" and answer.short_answer["text"] == "two"
    s, e = fragment_range(answer.short_answer["fragment"])
    assert texts[cited.document_id][s:e] == "two"
    answer = answerer.ask("How many hours between filter replacements?")
    assert answer.short_answer["text"] == "300" and "Replace the filter every 300 hours" in answer.answer


def test_a_question_whose_name_no_kept_source_holds_is_refused_with_the_reason(pump):
    _, chunks, index, embedder = pump
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=2.0)
    answer = answerer.ask("How often does the Zeppelin filter need replacing?")
    assert answer.refused and answer.refused_by == "terms" and answer.answer is None
    assert answer.refusal == 'the sources never mention "Zeppelin"'
    answered = answerer.ask("How often should the filter be replaced?")
    assert not answered.refused and "300 hours" in answered.answer and answered.terms_missing == []


def test_a_question_asking_a_date_no_kept_source_holds_is_refused(pump):
    _, chunks, index, embedder = pump
    answer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=2.0).ask(
        "In what year was the pump filter replaced?"
    )
    assert answer.refused and answer.refused_by == "kind"
    assert answer.refusal == "the question asks for a date and no source kept holds one"


def test_a_question_in_a_language_the_model_was_not_trained_on_names_the_model_that_reads_it(pump):
    _, chunks, index, embedder = pump
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=2.0, model="minilm")
    answer = answerer.ask("Wie oft sollte der Filter der Pumpe gewechselt werden?")
    assert answer.refused and answer.refused_by == "language"
    assert "German" in answer.refusal and "minilm" in answer.refusal and "me5-small-int8" in answer.refusal
    assert not answerer.ask("How often should the filter be replaced?").refused


def test_a_not_the_matching_sentences_never_say_is_refused(pump):
    _, chunks, index, embedder = pump
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=2.0)
    answer = answerer.ask("Which way should the inlet valve not face?")
    assert answer.refused and answer.refused_by == "negation"
    assert answer.refusal == 'the question says "not" and no source sentence that matches it does'
    assert not answerer.ask("Which way should the inlet valve face?").refused


def test_names_spelled_one_letter_off_written_out_or_in_part_are_held():
    def refused(question: str, text: str) -> str | None:
        return read_against(read_question(question, "en"), [text], lambda term: 0.0).refused_by

    assert refused("How many paintings did John Sheeshanks give?", "John Sheepshanks gave 233 paintings.") is None
    assert refused("What does the UMC oppose?", "The United Methodist Church opposes conscription.") is None
    assert refused("What does Graham Twigg propose?", "Twigg suggested that the cause was anthrax.") is None
    assert refused("What does the IMF oppose?", "The United Methodist Church opposes conscription.") == "terms"
    assert refused("How many paintings did Jane Austen give?", "John Sheepshanks gave 233 paintings.") == "terms"


def test_a_question_the_model_cannot_read_and_nothing_is_near_still_says_why(pump):
    _, chunks, index, embedder = pump
    answerer = Answerer(index, chunks, embedder, Extractive(embedder), threshold=0.01, model="minilm")
    answer = answerer.ask("Wie oft sollte der Filter der Pumpe gewechselt werden?")
    assert answer.refused and answer.refused_by == "language" and "me5-small-int8" in answer.refusal
    english = answerer.ask("How often should the filter be replaced?")
    assert english.refused and english.refused_by == "distance" and english.refusal is None
