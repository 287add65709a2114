"""Progress lines and the closing summary of `rag-assets run`, read from Dagster's events."""

import logging
from dataclasses import dataclass, field

from dagster import AssetCheckSeverity

from rag_assets.defs.glue import label
from rag_assets.defs.partitions import model_and_strategy

SUMMARY_FIELDS = [  # (metadata key, column title, format)
    ("chunks", "chunks", "{:d}"),
    ("header_share", "header share", "{:.1%}"),
    ("over_window", "over window", "{:d}"),
    ("answers_destroyed", "answers destroyed", "{:d}"),
    ("answers_not_citable", "not citable", "{:d}"),
]


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells as right-aligned columns, indented: the tables `run` closes with."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]


def _value(entry):
    return getattr(entry, "value", entry)


@dataclass
class RunReport:
    chunk_sets: dict[str, dict] = field(default_factory=dict)  # strategy -> its chunk set's figures
    embeddings: dict[tuple[str, str], dict] = field(default_factory=dict)  # (model, strategy) -> its cost
    answerable: int = 0
    failed_checks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    materialized: int = 0
    languages: dict[str, float] = field(default_factory=dict)  # the corpus's, by share of characters
    document_languages: dict[str, str] = field(default_factory=dict)  # document_id -> its language
    named: bool = False  # the models were named (a model chosen for the corpus is never warned about)

    def add(self, result) -> list[str]:
        """Record one run's materialisations and checks; return its progress lines."""
        lines = []
        for event in result.get_asset_materialization_events():
            mat = event.event_specific_data.materialization
            name = label(mat.asset_key, mat.partition)
            meta = {k: _value(v) for k, v in mat.metadata.items()}
            self.materialized += 1
            rows = meta.get("dagster/row_count", meta.get("documents"))
            lines.append(f"{name}: {rows} rows" if rows is not None else name)
            if mat.asset_key.to_user_string() == "chunk_sets":  # what it destroys
                self.chunk_sets[mat.partition] = meta
                self.answerable = meta.get("answerable_questions", self.answerable)
            elif mat.asset_key.to_user_string() == "embeddings":  # what it costs each model
                self.embeddings[model_and_strategy(mat.partition)] = meta
        for evaluation in result.get_asset_check_evaluations():
            name = f"{evaluation.asset_key.to_user_string()}:{evaluation.check_name}"
            details = {k: _value(v) for k, v in evaluation.metadata.items()}
            if evaluation.passed:
                continue
            if evaluation.severity == AssetCheckSeverity.WARN:  # a state to see, not a failure
                self.warnings.append(f"{name}: {evaluation.description or details}")
                lines.append(f"CHECK WARNING {name}: {evaluation.description or details}")
            else:
                self.failed_checks.append(name)
                lines.append(f"CHECK FAILED {name}: {details}")
        return lines

    @staticmethod
    def warnings_of(instance, run_id: str) -> list[str]:
        """What the run's assets logged at WARNING or above (a failed document, rejected questions),
        but Dagster's note for each partition a run did not materialise (strategies or models not
        named), which the assets read only when present."""
        return [
            e.user_message
            for e in instance.all_logs(run_id)
            if e.dagster_event is None
            and e.level >= logging.WARNING
            and e.user_message
            and "allow_missing_partitions=True" not in e.user_message
        ]

    @property
    def checks_passed(self) -> bool:
        return not self.failed_checks

    def failure(self, result) -> str:
        """One line per failed step: its innermost error (the full traceback is in the run's
        event log, which the UI shows)."""
        lines = []
        for event in result.all_events:
            if not event.is_step_failure:
                continue
            error = event.event_specific_data.error
            while error.cause is not None:
                error = error.cause
            lines.append(f"  {event.step_key}: {error.cls_name}: {error.message.strip().splitlines()[0]}")
        return f"run {result.run_id[:8]} failed (its full log is in the UI):\n" + "\n".join(lines)

    def _coverage_warnings(self) -> list[str]:
        """A line per embedded model not trained on most of the corpus, with its chunks over the window."""
        from rag_assets.retrieval.model_choice import coverage_warning

        lines = []
        for model in dict.fromkeys(m for m, _ in self.embeddings) if self.named else ():
            over = {
                s: (cost["over_window"], self.chunk_sets.get(s, {}).get("chunks", 0))
                for (m, s), cost in self.embeddings.items()
                if m == model and "over_window" in cost
            }
            line = coverage_warning(model, self.languages, over)
            lines += [line] if line else []
        return lines

    def summary(self, seconds: float) -> str:
        out = [f"\n{self.materialized} materialisations in {seconds:.1f}s"]
        if self.chunk_sets:
            out.append(f"chunk sets ({self.answerable} answerable questions in the ground truth):")
            header = ["strategy", "model"] + [title for _, title, _ in SUMMARY_FIELDS]
            rows = []
            for strategy, meta in self.chunk_sets.items():
                models = {m: cost for (m, s), cost in self.embeddings.items() if s == strategy}
                for model, cost in (models or {"—": {}}).items():
                    both = {**meta, **cost}
                    row = [fmt.format(both[k]) if k in both else "—" for k, _, fmt in SUMMARY_FIELDS]
                    rows.append([strategy, model, *row])
            out += aligned([header] + rows)
        out.append(
            "all asset checks passed" if self.checks_passed else f"FAILED checks: {', '.join(self.failed_checks)}"
        )
        out += [f"warning: {w}" for w in self.warnings + self._coverage_warnings()]
        return "\n".join(out)
