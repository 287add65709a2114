"""Where the garbled-text-layer threshold sits: the share of dictionary words in real text of
several languages and in garbled text (letters shifted or substituted, as a broken ToUnicode
map gives).

    python bench/garbled_text.py
"""

import codecs
import random

from common import bundled_chunks

from rag_assets.ingest.extractors import _LATIN_WORD, GARBLED, _known_words

SAMPLES = {  # the opening of the Wikipedia article "Immune system" in each language
    "Spanish": "El sistema inmunitario es un sistema de estructuras y procesos biológicos dentro de un organismo "
    "que protege contra las enfermedades. Para funcionar correctamente, un sistema inmunitario debe detectar una "
    "amplia variedad de agentes, conocidos como patógenos, desde virus hasta gusanos parásitos, y distinguirlos del "
    "tejido sano del propio organismo.",
    "Italian": "Il sistema immunitario è un sistema di strutture e processi biologici all'interno di un organismo "
    "che protegge dalle malattie. Per funzionare correttamente, un sistema immunitario deve rilevare una grande "
    "varietà di agenti, noti come patogeni, dai virus ai vermi parassiti, e distinguerli dal tessuto sano.",
    "German": "Das Immunsystem ist ein System aus Strukturen und biologischen Prozessen in einem Organismus, das vor "
    "Krankheiten schützt. Um richtig zu funktionieren, muss ein Immunsystem eine Vielzahl von Erregern erkennen, "
    "von Viren bis zu parasitischen Würmern, und sie vom gesunden Gewebe des Organismus unterscheiden.",
}


def share(text: str) -> tuple[int, float]:
    words = [w.lower() for w in _LATIN_WORD.findall(text)]
    return len(words), sum(w in _known_words() for w in words) / len(words)


def main() -> None:
    english = " ".join(bundled_chunks("C")[0]["text"])
    letters = "abcdefghijklmnopqrstuvwxyz"
    shuffled = list(letters)
    random.Random(0).shuffle(shuffled)
    rows = {
        "English (bundled corpus)": english,
        **SAMPLES,
        "English, letters shifted (rot13)": codecs.encode(english, "rot13"),
        "English, letters substituted": english.lower().translate(str.maketrans(letters, "".join(shuffled))),
    }
    print(f"threshold: a page of >= {GARBLED['min_words']} words is garbled under {GARBLED['known_share']:.0%}")
    for name, text in rows.items():
        n, known = share(text)
        print(f"{name:<36} {n:>7} words  {known:6.1%} dictionary words")


if __name__ == "__main__":
    main()
