"""`rag-assets ask`: answer one question from the materialised index, with citations, or refuse.

Nothing is written: the data dir may be read-only. The index is refused, never rebuilt, when it
is missing, stale or unreadable."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys

from rag_assets.app.options import (
    CommandError,
    add_data_dir,
    add_dataset,
    add_embedder,
    add_generator,
    add_instance,
    add_judge,
    checked_endpoint,
    checked_judge,
    dataset_of,
    printable,
    question,
    refusing,
    settings_of,
    tenant,
    threshold,
)


def add(sub) -> None:
    from rag_assets.catalog import (
        ANSWERERS,
        DEFAULT_ANSWERER,
        DEFAULT_RETRIEVER,
        PACKAGED,
        RETRIEVERS,
        SERVING_STRATEGY,
        STRATEGIES,
    )

    ask = sub.add_parser("ask", help="answer a question from the materialised index, with citations, or say NO ANSWER")
    ask.add_argument("question", type=question)
    add_dataset(ask)
    add_data_dir(ask)
    ask.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        help=f"chunking strategy to answer from (default: the one `rag-assets use` chose, else {SERVING_STRATEGY})",
    )
    ask.add_argument(
        "--retriever",
        choices=RETRIEVERS,
        help=f"default: the one `rag-assets use` chose for the data dir, else {DEFAULT_RETRIEVER}",
    )
    ask.add_argument(
        "--threshold",
        type=threshold,
        help="refusal gate: cosine distance in [0, 2] (default: the served model's own, "
        + ", ".join(f"{k} {v.threshold}" for k, v in PACKAGED.items())
        + ")",
    )
    ask.add_argument(
        "--answerer",
        choices=ANSWERERS,
        help=f"extractive (a sentence of the sources, verbatim) or generate (the language model writes); "
        f"default: generate when --generator or --generator-url is given, else {DEFAULT_ANSWERER}, the one "
        "that contains a reference answer most often on the bundled corpus (docs/answering.md)",
    )
    add_generator(ask)
    add_judge(ask)
    who = ask.add_mutually_exclusive_group()
    who.add_argument(
        "--tenant",
        type=tenant,
        help="answer on behalf of this tenant or group: public documents "
        "and those whose access list names it (default: public documents only)",
    )
    who.add_argument("--all-tenants", action="store_true", help="operator view: every document")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    add_embedder(ask)
    add_instance(ask)
    ask.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from rag_assets.app.serving import IndexNotReady, answerer, lab_or_chosen, local_generator, opened
    from rag_assets.catalog import DEFAULT_ANSWERER, PACKAGED
    from rag_assets.ingest.access import ALL_TENANTS
    from rag_assets.retrieval import embedders

    settings = settings_of(
        args, dataset_of(args), served=True, threshold=args.threshold, retriever=args.retriever, experiment=""
    )
    settings = lab_or_chosen(settings, args.strategy, args.embedder, args.retriever)
    if args.generator_url and settings.retriever == "rerank-llm":
        raise CommandError(
            "rerank-llm scores passages with a local generator's token probabilities: drop --generator-url"
        )
    # a generator named on the command line is there to answer, unless another answerer is asked for
    chosen = args.answerer or ("generate" if args.generator or args.generator_url else DEFAULT_ANSWERER)
    embedder = embedders.packaged(settings.served_model)  # loads nothing yet
    with refusing(IndexNotReady, ValueError), opened(settings) as served:
        strategy = args.strategy or served.default_strategy()
        index, chunks = served.load(strategy, embedder.identity)
    uses_generator = chosen == "generate" or settings.retriever == "rerank-llm"
    lm = checked_endpoint(settings) if uses_generator and settings.generator_url else local_generator(settings)
    if uses_generator and not settings.generator_url and not args.json and sys.stderr.isatty():
        lm.shown = sys.stderr  # a person waits at a terminal: show the loading and the words as they come
    with refusing(ValueError, FileNotFoundError):
        asker = answerer(
            settings,
            index,
            chunks,
            embedder,
            lm,
            chosen,
            settings.retriever,
            ALL_TENANTS if args.all_tenants else args.tenant,
            checked_judge(settings),
        )
        answer = asker.ask(args.question)
    source = (
        "set by --threshold" if settings.threshold is not None else PACKAGED[settings.served_model].threshold_source
    )
    embedded_with = {
        "model": settings.served_model,
        "chosen": settings.model_choice or "the default",
        "threshold_source": source,
    }
    if settings.chosen:  # the configuration's own model and gate
        source = index.threshold_source
        embedded_with = {"model": index.embedder.identity, "chosen": f"by {settings.chosen}"}
        embedded_with["threshold_source"] = source
    if args.json:
        out = {**answer.as_dict(), "embedding_model": embedded_with}
        print(json.dumps(out, ensure_ascii=False, indent=2, allow_nan=False))
    else:
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            print_answer(answer)
            print(f"(embedding model {embedded_with['model']}, {embedded_with['chosen']}; its threshold {source})")
            if settings.chosen:
                print(f"(configuration {settings.chosen}, chosen with `rag-assets use`)")
        print(printable(shown.getvalue(), lines=True), end="")  # the sources', generator's and judge's words
    return 0


def print_answers_question(a) -> None:
    """Whether the answer answers the question, apart from whether it is in the source: the short
    answer of the kind asked for, and the question's terms the kept sources hold."""
    asked = f"a {a.asked}" if a.asked else "no particular kind"
    if a.short_answer and a.citations:
        print(f'Short answer: "{a.short_answer["text"]}" ({a.citations[0].document_id}{a.short_answer["fragment"]})')
    held = ", ".join(a.terms_held) or "none"
    missing = f"; not found: {', '.join(a.terms_missing)}" if a.terms_missing else ""
    print(f"Answers the question? It asks for {asked}; its terms found in the sources: {held}{missing}.\n")


def print_answer(a) -> None:
    run = f"strategy {a.strategy}, {a.retriever}, threshold {a.threshold:.3f}, dense search {a.dense_search}"
    if a.refused and a.refused_by not in (None, "distance"):
        print(f"NO ANSWER: {a.refusal} ({run}). The model was not called.")
        return
    if a.refused:
        nearest = "nothing retrieved" if a.nearest_distance is None else f"nearest chunk at {a.nearest_distance:.3f}"
        print(
            f"NO ANSWER: no retrieved chunk is under the distance threshold ({nearest}; {run}). "
            "The model was not called."
        )
        return
    if a.failure:
        print(f"NO ANSWER: the generator gave none ({a.failure}; {run}; model {a.model}).")
        return
    print(a.answer, "\n")
    print_answers_question(a)
    for s in a.support:  # every sentence's verdict, the claims off, and the source sentence it was read against
        cited = "[" + "], [".join(map(str, s["cites"])) + "]" if s["cites"] else "its sources"
        elsewhere = (
            f" (another source shown holds {', '.join(s['elsewhere'])}: a wrong citation)" if s["elsewhere"] else ""
        )
        asked = s.get("from_question") or []
        asked = f" (only the question says {', '.join(asked)})" if asked else ""
        said = []
        if s["contradicted"]:
            said.append(f"states what {cited} do not: {', '.join(s['contradicted'])}")
        if s["not_in_source"]:
            said.append(f"{cited} do not mention: {', '.join(s['not_in_source'])}")
        if s.get("worked"):
            said.append(f"worked out from {cited}: {'; '.join(s['worked'])}")
        print(f'{s["verdict"]}: "{s["text"]}" {"; ".join(said)}{elsewhere}{asked}'.rstrip())
        if s.get("matched"):
            print(f'    read against {cited}: "{s["matched"]}"')
    if a.support:
        print()
    judged = [s for s in a.support if "judge" in s]
    if judged:
        print(f"Judge ({judged[0]['judge']['model']}; beside the check above, not replacing it):")
        for s in judged:
            print(f'  {s["judge"]["verdict"]}: "{s["text"]}" (the check: {s["verdict"]})')
        print()
    if a.citations:
        print("Citations:")
        for c in a.citations:
            cut = " (quote cut at the input budget)" if c.truncated else ""
            where = f"{c.document_id}{c.fragment}" + (f" {c.locator}" if c.locator else "")
            print(f"  [{c.index}] {c.locator_label} | {where} | distance {c.cosine_distance:.3f}{cut}")
            quote = " ".join(c.quote.split())
            print(f'      "{quote[:240]}{"..." if len(quote) > 240 else ""}"')
    else:
        print(f"No citations: the answer cites none of the {len(a.sources)} sources it was given.")
    if a.dangling:
        print(f"Removed: [{'], ['.join(map(str, a.dangling))}] point at no source.")
    stage = "generation" if a.answerer == "generate" else "sentence choice"
    print(
        f"\n({run}; answerer {a.answerer}, {a.model}; retrieval {a.retrieval_ms:.0f} ms, "
        f"context {a.context_ms:.0f} ms, {stage} {a.generation_ms:.0f} ms"
        + (f"; loading the model took {a.load_ms / 1000:.1f} s)" if a.answerer == "generate" else ")")
    )
