"""MentalBench generation task (docs/pillars/mentalbench.md#mentalbench): counselling replies judged on 7 attributes.

Items are contexts (a person's message). The model under test writes a reply (docs/pillars/mentalbench.md#generation decoding: temperature 0.7,
512 tokens); the reply is split into reasoning and visible text and given a `gen_status`; only visible text
is judged. When the dataset's human reply (`response` column) is available, it is judged beside the model
as an extra item with source `original` (that item's generation is not used: its prompt asks for "OK").

Data, in order: `-O mentalbench_path=FILE` (CSV, Parquet, JSON(L), or a Hugging Face export folder),
`trustmh.data.locate("mentalbench", ...)`; else, offline, the 1,000 rated contexts of the MentalAlign
judge workbooks (no reference replies then). `-O mentalbench_starter=1` (or the starter suite) uses the
project's own demo items.

The judges are the run's (`--judge` repeated is an ensemble: `RunContext.judges`); the model's label is
`RunContext.model`. Options (`-O key=value`): `ensemble` (mean | median | vote), `min_valid`,
`judge_repeats` (r > 1: test–retest), `temperature`, `max_tokens`, `samples` (default mode only),
`judge_max_tokens`, `mentalalign_dir` (for ConvID checks and the offline contexts), `verify_conv_ids`
(default 1), `skip_original` (do not judge the reference replies), `faithful_clean_published` (faithful mode: judge published replies without their
reasoning, like default), and, for `trustmh rescore`, `rescore` (every published reply becomes an item)
and `selection=head` (first rows in file order in every mode).
"""


from __future__ import annotations

from typing import Any

import numpy as np

from trustmh.core import (
    MAX_REPEATS,
    MAX_TOKENS,
    GenConfig,
    Item,
    JudgeRequest,
    Option,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
)
from trustmh.data import resolve
from trustmh.judges.ensemble import combine, ensemble_settings
from trustmh.pillars.mentalbench.aggregate import aggregate_mentalbench
from trustmh.pillars.mentalbench.data import (
    MENTALBENCH_REL,
    MentalBenchData,
    contexts_only,
    load_mentalbench,
    mentalalign_contexts,
    select_rows,
    starter_data,
)
from trustmh.pillars.mentalbench.export import export_long_table
from trustmh.pillars.mentalbench.judging import (
    judge_members,
    judge_repeats,
    judge_schema,
    judge_valid,
    no_response_rating,
    option_int,
    parse_judge,
    rating_scores,
    request_name,
    response_view,
)
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.sources import (
    MODEL_SOURCE,
    ORIGINAL,
    gen_status,
)
from trustmh.prompts import render, template_sha256

GEN_TEMPLATE = "mentalbench_generate"
FIXED_PROMPT = ("This item carries a reference reply that is judged as it is; your answer is not used. "
                "Reply with the single word OK.")


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'mentalbench_path': Option('MentalBench-100k file'),
    'mentalalign_dir': Option('MentalAlign folder'),
    'mentalbench_starter': Option('1: starter contexts'),
    'judge_repeats': Option('judge repeats (test-retest)', minimum=1, maximum=MAX_REPEATS),
    'samples': Option('replies per context', minimum=1, maximum=MAX_REPEATS),
    'temperature': Option('generation temperature'),
    'max_tokens': Option('generation tokens', minimum=1, maximum=MAX_TOKENS),
    'selection': Option('context selection'),
    'skip_original': Option('1: no reference'),
    'verify_conv_ids': Option('1: check ConvIDs'),
    'faithful_clean_published': Option('faithful cleaning'),
    'rescore': Option('set by rescore'),
}


class MentalBenchGeneration(Subtask):
    id = "mentalbench/generation"
    task_name = "mentalbench"
    anchors = same_anchors(1.0, 5.0)
    suite = "mentalbench"
    options = OPTIONS
    title = "MentalBench: counselling replies judged on 7 attributes"
    metric_labels = {
        **{a: f"mean judge score of the model's replies on {a.lower()} (1-5)" for a in ATTRIBUTES},
        "css": "cognitive support score: mean of guidance, informativeness, relevance and safety",
        "ars": "affective resonance score: mean of empathy, helpfulness and understanding",
        "original_mean7": "mean of the seven attributes for the human counsellors' original replies",
        "model_label": "the name the model's replies carry in the comparison",
        "no_response": "items the model gave no reply to", "n_unparsed": "judge replies that could not be read",
    }
    datasets = ("mentalbench", "mentalalign")
    judge_use = "yes"
    # the attribute scores of an ensemble are averaged (the MentalBench paper's rule); `-O ensemble` overrides
    ensemble_rule = "mean"
    judge_templates = ("mentalbench_judge", "mentalbench_judge_faithful")
    format_reminder = None  # free text: nothing to re-ask

    # ---------------------------------------------------------------- items

    def load(self, ctx: RunContext) -> MentalBenchData:
        if ctx.suite == "starter" or ctx.flag("mentalbench_starter"):
            return starter_data(self.id)
        user_path = ctx.options.get("mentalbench_path")

        try:
            path = resolve("mentalbench", MENTALBENCH_REL, user_path)
        except TrustmhError:
            if user_path:
                raise
            return contexts_only(ctx.options)
        ref = None
        if ctx.flag("verify_conv_ids", True):
            got = mentalalign_contexts(ctx.options)
            ref = got[1] if got is not None else None
        return load_mentalbench(path, reference_contexts=ref)

    def items(self, ctx: RunContext) -> list[Item]:
        data = self.load(ctx)
        rows, dropped = select_rows(data, ctx)
        info = {"origin": data.origin, "file": None if data.path is None else data.path.name,
                "counts": data.counts, "duplicates_dropped": dropped, "notes": data.notes,
                "generate_template_sha256": template_sha256(GEN_TEMPLATE),
                "judge_template_sha256": template_sha256("mentalbench_judge_faithful" if ctx.mode == "faithful"
                                                         else "mentalbench_judge")}
        rescore = ctx.flag("rescore")
        if rescore and data.origin != "mentalbench":
            raise TrustmhError("mentalbench rescore needs a MentalBench table with response columns")
        items: list[Item] = []
        for r in rows:
            base = {"conv_id": r.conv_id, "row": r.row, "context": r.context, "data": info}
            if r.extra:
                base["extra"] = r.extra
            if rescore:  # every published reply, judged as it is; no model under test
                for src in data.sources:
                    items.append(Item(id=f"{r.conv_id}:{src}", prompt=FIXED_PROMPT, cluster=r.conv_id,
                                      metadata={**base, "source": src, "skip_generation": True,
                                                "fixed_response": r.responses.get(src)}))
                continue
            items.append(Item(id=f"{r.conv_id}:{MODEL_SOURCE}", prompt=render(GEN_TEMPLATE, context=r.context),
                              cluster=r.conv_id, metadata={**base, "source": MODEL_SOURCE}))
            if ORIGINAL in r.responses and not ctx.flag("skip_original"):
                items.append(Item(id=f"{r.conv_id}:{ORIGINAL}", prompt=FIXED_PROMPT, cluster=r.conv_id,
                                  metadata={**base, "source": ORIGINAL, "skip_generation": True,
                                            "fixed_response": r.responses[ORIGINAL]}))
        return items

    def generation(self, ctx: RunContext) -> GenConfig:
        if ctx.mode == "faithful":
            return GenConfig(temperature=0.7, max_tokens=512, epochs=1)
        t = ctx.options.get("temperature", 0.7)
        try:
            temperature = float(t)
        except (TypeError, ValueError):
            raise TrustmhError(f"mentalbench: option temperature={t!r} must be a number") from None
        return GenConfig(temperature=temperature, max_tokens=option_int(ctx, "max_tokens", 512),
                         epochs=option_int(ctx, "samples", 1))

    # ---------------------------------------------------------------- judging

    def judge_prompt(self, item: Item, text: str, ctx: RunContext) -> str:
        template = "mentalbench_judge_faithful" if ctx.mode == "faithful" else "mentalbench_judge"
        return render(template, context=item.metadata["context"], response=text)

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        text, _, _ = response_view(item, response, ctx)
        if text is None:
            return []  # never judged: no_response
        prompt = self.judge_prompt(item, text, ctx)
        repeats = judge_repeats(ctx)
        max_tokens = 512 if ctx.mode == "faithful" else option_int(ctx, "judge_max_tokens", 2048)
        schema = judge_schema(ctx.mode)
        return [JudgeRequest(name=request_name(label, k, repeats), prompt=prompt, validate=judge_valid,
                             max_tokens=max_tokens, model=model, schema=schema)
                for label, model in judge_members(ctx) for k in range(1, repeats + 1)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        text, split, placeholder = response_view(item, response, ctx)
        members = judge_members(ctx)
        repeats = judge_repeats(ctx)
        status = gen_status(split)
        out: dict[str, Any] = {
            "valid": text is not None,
            "source": item.metadata.get("source", MODEL_SOURCE),
            "conv_id": item.metadata.get("conv_id", item.cluster_id),
            "gen_status": status,
            "reasoning_chars": len(split.reasoning),
            "judged": text is not None and judge_outputs is not None,
        }
        if placeholder:
            out["placeholder"] = "nan"
        if judge_outputs is None:
            return out
        ratings: dict[str, Any] = {}
        raters: dict[str, dict[str, Any]] = {}
        member_scores: dict[str, dict[str, float | None]] = {}
        for label, _ in members:
            for k in range(1, repeats + 1):
                name = request_name(label, k, repeats)
                raters[name] = {"judge": label, "repeat": k}
                if text is None:
                    ratings[name] = no_response_rating()
                else:
                    ratings[name] = parse_judge(judge_outputs.get(name))
                ratings[name]["score"] = rating_scores(ratings[name], ctx.mode)
            member_scores[label] = dict(ratings[request_name(label, 1, repeats)]["score"])
        aggregator, min_valid = ensemble_settings(ctx, MentalBenchGeneration, len(members))
        final: dict[str, float | None] = {}
        ens_status: dict[str, str] = {}
        for a in ATTRIBUTES:
            vals = [member_scores[label][a] for label, _ in members]
            if text is None:
                final[a], ens_status[a] = None, "no_response"
            elif len(members) == 1:
                final[a] = vals[0]
                ens_status[a] = ratings[request_name(members[0][0], 1, repeats)]["status"][a]
            else:
                final[a], ens_status[a] = combine(vals, aggregator, min_valid)
        vals7 = [final[a] for a in ATTRIBUTES]
        out.update(ratings=ratings, raters=raters, scores=final, score_status=ens_status,
                   mean7=None if any(v is None for v in vals7) else float(np.mean(vals7)))
        if out["mean7"] is not None:
            out["inspect_value"] = out["mean7"]
        return out

    # ---------------------------------------------------------------- aggregate

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        reason = super().not_computed_reason(ctx)
        if reason is not None:
            return reason
        if not ctx.has_judge:
            return "no judge configured (MentalBench scores come from LLM judges: pass --judge)"
        return None

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        return aggregate_mentalbench(records, ctx, self)

    def finish_run(self, records: list[Record], out: Any, ctx: RunContext) -> list[str]:
        """The judges' scores as the tidy long table `trustmh align` reads (judge_long.csv)."""
        written = export_long_table(records, out, model_label=ctx.model)
        if "judge_long" in written:
            return []
        return ["judge_long.csv not written: no judged reply in this run is one of the human-rated MentalAlign "
                "responses (judge the released responses with `trustmh rescore --format mentalbench` to compare "
                "a judge with the experts)"]
