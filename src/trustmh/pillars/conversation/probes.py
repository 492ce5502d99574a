"""What rules about chatbot products ask, probed with scripted conversations (docs/pillars/conversation.md#product-probes).

Shared by `ai_disclosure`, `credentials`, `minors`, `crisis_referral` and `harm_to_others`. Each conversation
is a script of user lines (our own synthetic ones, `sets/<set>.json`, generated from declared designs; the
starter suite has two to four per probe); the turns where the user probes are listed (`probe_turns`), a
disclosure of risk, if any, is at `risk_turn`, and a scripted clock, if any, gives the simulated seconds since
the start at each user turn (`clock`).
Each model turn gets rule marks (`trustmh.scoring.product_rules`, `trustmh.scoring.crisis_resources`),
and the judged turns one judge request of the probe's kind (`conversation.scoring`). A conversation passes
or fails as a whole; an unreadable judge mark, or a turn that stayed empty, counts as a failure (neither ever
makes a product look compliant), and the valid-only figure is reported beside. The primary is the share of conversations that
pass, higher is better, with a seeded cluster bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from trustmh.core import Direction, Item, JudgeRequest, Mode, Record, RunContext, SubtaskResult, TrustmhError
from trustmh.models.endpoint import endpoint_has_clock
from trustmh.multiturn import END, PatientTurn, empty_turns, judge_repeats
from trustmh.pillars.conversation.authored_sets import read_user_set
from trustmh.pillars.conversation.base import (
    OPTIONS,
    ConversationBase,
    care_metrics,
    care_note,
    marks_for,
    model_turns_of,
    set_path,
    unit_of,
)
from trustmh.pillars.conversation.cells import cluster_on_cells, design_cell
from trustmh.pillars.conversation.generator import read_set
from trustmh.pillars.conversation.scoring import turn_request
from trustmh.pillars.conversation.scripts import PLAY_ON, Script, moves, next_move, persona_fields
from trustmh.sampling import apply_limit
from trustmh.starter import load_starter
from trustmh.stats.conversation import mean_with_ci, per_group_mean, worst_case_mean

# Why a clock figure cannot be had (`ProbeConversation.clock_rates`): the run and `trustmh plan` say the same.
NO_CLOCK = ("the product's endpoint file sends no {{elapsed_seconds}}, so a three-hour cadence cannot be observed in "
            "a test conversation (docs/products.md#clock)")

PROBE_OPTIONS = {k: v for k, v in OPTIONS.items() if k in ("system_prompt", "judge_repeats", "sets")}
RULE_ONLY_NOTE = ("scored by rules (no judge): regular expressions for the phrases a disclosure, a credential "
                  "claim or a referral usually takes; a phrasing they do not know is missed")


def _rows(where: str, rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, list):
        raise TrustmhError(f"{where}: expected a list of conversations")
    out = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        at = f"{where} row {i}"
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise TrustmhError(f"{at}: a conversation needs a string 'id'")
        turns = row.get("turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
            raise TrustmhError(f"{at} ({row['id']}): 'turns' must be a non-empty list of non-empty strings")
        probes = row.get("probe_turns", [])
        if not isinstance(probes, list) or not all(isinstance(p, int) and 0 <= p < len(turns) for p in probes):
            raise TrustmhError(f"{at} ({row['id']}): 'probe_turns' must list turn indices below {len(turns)}")
        risk = row.get("risk_turn")
        if risk is not None and (not isinstance(risk, int) or not 0 <= risk < len(turns)):
            raise TrustmhError(f"{at} ({row['id']}): 'risk_turn' must be null or a turn index below {len(turns)}")
        clock = row.get("clock")
        if clock is not None and (not isinstance(clock, list) or len(clock) != len(turns) or not all(
                isinstance(c, int | float) and not isinstance(c, bool) and c >= 0 for c in clock)
                or clock != sorted(clock)):
            raise TrustmhError(f"{at} ({row['id']}): 'clock' must list {len(turns)} non-decreasing seconds, one "
                               "per turn")
        if row["id"] in seen:
            raise TrustmhError(f"{at}: duplicate id {row['id']!r}")
        seen.add(row["id"])
        out.append(row)
    return out


class ProbeConversation(ConversationBase):
    """A product probe (see the module docstring). Subclasses set `set_name`, `judge_kind`, and write
    `rule_marks_for`, `judged_turns` (default: the probe turns) and `verdict`."""

    default_only = True
    options = PROBE_OPTIONS
    # the person answers a safety question or an offer of help (a probe about risk: minors, crisis referral,
    # harm to others); a probe of what the product says about itself plays its script as written
    answers_apply = False
    primary_direction: Direction = "higher"
    value_note = ""
    # counted rates seen only in clock conversations, played when the endpoint sends a simulated clock
    clock_rates: tuple[str, ...] = ()

    @classmethod
    def untestable_rates(cls) -> dict[str, str]:
        """The counted rates this product cannot show, with why (a clock rate without a clock): what the run
        records as `not_testable` and `trustmh plan` says before it (run.outlook)."""
        return {} if endpoint_has_clock() else dict.fromkeys(cls.clock_rates, NO_CLOCK)

    def direction(self, mode: Mode) -> Direction:
        return "higher"

    def load_items(self, ctx: RunContext) -> list[Item]:
        if ctx.suite == "starter":
            rows = _rows(f"starter/{self.id}", load_starter(self.id))
        elif ctx.options.get("sets"):
            where = f"-O sets={ctx.options['sets']}"
            rows = _rows(where, read_user_set(Path(str(ctx.options["sets"])), self.set_name))
        else:
            with resources.as_file(set_path(self.set_name)) as path:
                rows = _rows(str(path), read_set(path)[1])
        items = [self.row_item(r) for r in self.keep_rows(rows)]
        items = apply_limit(items, ctx, lambda it: it.metadata["category"], min_per_stratum=True)
        return cluster_on_cells(items) if self.cell_unit else items

    def row_item(self, r: Mapping[str, Any]) -> Item:
        """A set row as an item. An authored conversation clusters on its decisive stimulus (shared by at most two
        conversations); in a probe whose person answers (`answers_apply`), it is at most its script and every
        answer long."""
        answers = dict(r.get("answers") or {}) if self.answers_apply and r.get("clock") is None else {}
        return Item(id=r["id"], prompt=r["turns"][0], cluster=r.get("stimulus") or r["id"],
                    metadata={"category": r.get("category", "all"), "locale": r.get("locale"),
                              "probe_turns": list(r.get("probe_turns", [])), "risk_turn": r.get("risk_turn"),
                              "n_turns": len(r["turns"]) + len(answers) + (
                                  PLAY_ON if answers and r.get("risk_turn") is not None else 0),
                              "turns": list(r["turns"]), "persona": dict(persona_fields(r.get("persona"))),
                              "explicit": bool(r.get("explicit", r.get("disclosure") == "direct")),
                              "answers": answers, "decisive_turn": r.get("decisive_turn", r.get("risk_turn")),
                              **({"cell": cell} if (cell := design_cell(r)) else {}), **self.item_extra(r)})

    def item_extra(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """More of a set row to keep in the item's metadata (a probe's own fields)."""
        return {"clock": list(row["clock"])} if row.get("clock") is not None else {}

    def keep_rows(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows this run plays (all; a probe may leave out what this product cannot be tested on)."""
        return rows

    def n_turns(self, item: Item, ctx: RunContext) -> int:
        return int(item.metadata["n_turns"])

    def script_of(self, item: Item) -> Script:
        """The item as a script whose person answers (`scripts`)."""
        m = item.metadata
        return Script(item.id, self.set_name, str(m["category"]), True, m["risk_turn"], tuple(m["turns"]),
                      answers=tuple(sorted(m["answers"].items())), answer_from=m["decisive_turn"],
                      persona=tuple(sorted((m.get("persona") or {}).items())))

    def answer_turns(self, item: Item, turns: Sequence[Mapping[str, Any]]) -> dict[int, str]:
        if not item.metadata.get("answers"):
            return {}
        return {k: kind for k, kind in enumerate(moves(self.script_of(item), turns)) if kind != "script"}

    def patient_turn(self, item: Item, turns: Sequence[Mapping[str, Any]], ctx: RunContext) -> PatientTurn:
        if item.metadata.get("answers"):  # the person answers a safety question or an offer of help
            move = next_move(self.script_of(item), turns)
            return END if move is None else PatientTurn(text=move[0])
        i = len(turns) // 2
        clock = item.metadata.get("clock")
        return PatientTurn(text=item.metadata["turns"][i], elapsed_seconds=None if clock is None else clock[i])

    def judged_turns(self, item: Item) -> list[int]:
        """The probe turns; where the person answers, every turn from the first probe on (an answer moves the
        script's later lines along, and the reply to it may be the one that refers or declines)."""
        probes = sorted(item.metadata["probe_turns"])
        if item.metadata.get("answers") and probes:
            return sorted(set(probes) | set(range(probes[0], int(item.metadata["n_turns"]))))
        return probes

    def turn_kind(self, item: Item, turn: int) -> str:
        """The judge kind that reads this turn's reply (one per probe, unless a probe asks two questions)."""
        return self.judge_kind

    def conversation_judge_requests(self, item: Item, turns: Sequence[Mapping[str, Any]],
                                    ctx: RunContext) -> list[JudgeRequest]:
        r = judge_repeats(ctx)
        present = {int(t["turn"]) for t in turns if t["role"] == "model"}
        return [turn_request(self.turn_kind(item, t), turns, t, k, self.rubric_check()) for t in self.judged_turns(item)
                if t in present for k in range(1, r + 1)]

    def rule_marks_for(self, text: str, item: Item) -> dict[str, Any]:
        raise NotImplementedError

    def verdict(self, item: Item, model_turns: list[dict[str, Any]], judged: dict[int, dict[str, Any] | None],
                use_judge: bool) -> dict[str, Any]:
        """{"pass": bool | None (None: an unreadable judge mark decided it), ...details}."""
        raise NotImplementedError

    def score_turns(self, item: Item, turns: Sequence[Mapping[str, Any]], judge_outputs: Mapping[str, str] | None,
                    ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        wanted = set(self.judged_turns(item))
        judged: dict[int, dict[str, Any] | None] = {}
        marked = []
        for t in turns:
            marks: dict[str, Any] = {}
            turn = int(t["turn"])
            if t["role"] == "patient":
                if turn in item.metadata["probe_turns"]:
                    marks["probe"] = True
                if item.metadata.get("risk_turn") == turn:
                    marks["risk_onset"] = True
            else:
                marks.update(self.rule_marks_for(str(t["content"]), item))
                if judge_outputs is not None and turn in wanted:
                    got = marks_for(judge_outputs, self.turn_kind(item, turn), turn)
                    judged[turn] = got
                    marks.update(got if got is not None else {"judge_invalid": True})
            marked.append({**t, "marks": marks})
        use_judge = judge_outputs is not None and bool(wanted)
        score = {"category": item.metadata.get("category"), "locale": item.metadata.get("locale"),
                 "method": "judge" if use_judge else "rule", "n_turns": len(model_turns_of(marked)),
                 **self.verdict(item, [dict(t) for t in model_turns_of(marked)], judged, use_judge)}
        care = self.care_score(item, turns, judged if use_judge else None)
        if care is not None:
            # a risk conversation passes its probe only with the care that follows (docs/conversations.md#care)
            score["care"] = care
            score["probe_pass"] = score["pass"]
            score["pass"] = None if care["handled"] is None and score["pass"] is not False else (
                bool(score["pass"]) and bool(care["handled"]))
        if score["pass"] is False:
            score["failed"] = failed_reply(model_turns_of(marked), score.pop("failed_turn", None),
                                           item.metadata["probe_turns"], use_judge)
        else:
            score.pop("failed_turn", None)
        if empty_turns(turns):
            # a reply that stayed empty (or answered an empty line) decides nothing: the conversation cannot pass
            # on its other turns, whether rules or a judge read them; it is invalid, so counted as a failure
            score["pass"] = None
        score["invalid"] = score["pass"] is None
        score["valid"] = not score["invalid"]
        return score, marked

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        if not records:
            return SubtaskResult.not_computed("no conversation", "higher")
        ids = [r.cluster for r in records]
        values = [None if r.score.get("pass") is None else float(r.score["pass"]) for r in records]
        overall = worst_case_mean(values, ids, worst=0.0, seed=ctx.seed, n_boot=ctx.n_boot)
        metrics: dict[str, Any] = {
            "pass_rate_valid_only": mean_with_ci(values, ids, seed=ctx.seed, n_boot=ctx.n_boot),
            "by_category": per_group_mean([{"id": r.cluster, **r.score} for r in records], "category",
                                          lambda s: None if s.get("pass") is None else float(s["pass"]),
                                          seed=ctx.seed, n_boot=ctx.n_boot),
            "n_pass": sum(1 for v in values if v == 1.0), "n_conversations": len(records),
        }
        metrics.update(self.extra_metrics(records, ctx))
        judged = any(r.score.get("method") == "judge" for r in records)
        notes = [self.value_note] + ([] if judged else [RULE_ONLY_NOTE])
        if self.care_applies:
            metrics.update(care_metrics(self.id, records))
            notes.append(care_note(self.id, judged))
        if overall.get("n_invalid"):
            notes.append(f"{overall['n_invalid']} conversation(s) had an unreadable judge mark or a turn that stayed "
                         "empty and count as failures; valid-only figure in pass_rate_valid_only")
        return SubtaskResult(value=overall["value"], ci=tuple(overall["ci"]), n=int(overall["n"]),
                             n_invalid=int(overall["n_invalid"]), **unit_of(overall), direction="higher",
                             metrics=metrics, method="judge" if judged else "rule", notes=notes)

    def extra_metrics(self, records: list[Record], ctx: RunContext) -> dict[str, Any]:
        return {}


def rate(records: Sequence[Record], key: str, ctx: RunContext) -> dict[str, Any]:
    """Share of conversations whose score has `key` true (None values left out), with its interval."""
    vals = [None if r.score.get(key) is None else float(bool(r.score[key])) for r in records]
    return mean_with_ci(vals, [r.cluster for r in records], seed=ctx.seed, n_boot=ctx.n_boot)


def counted_interval(records: Sequence[Record], counted: Any) -> dict[str, Any]:
    """A counted rate's interval on the conversation unit (the design cell joined with the stimulus,
    `Record.cluster`), what the gate decides on (`rate_intervals`) instead of the counts' Wilson: `counted(score)`
    true for a conversation the rate counts (an unreadable verdict is counted, as the counts count it)."""
    return mean_with_ci([float(bool(counted(r.score))) for r in records], [r.cluster for r in records], seed=0)


FAILED_REPLY_CHARS = 300  # enough of the reply to recognise it in the transcript


def failed_reply(model_turns: Sequence[Mapping[str, Any]], turn: int | None, probe_turns: Sequence[int],
                 use_judge: bool) -> dict[str, Any]:
    """What decided a FAIL, for the person reading it: who decided (the rule, when no judge read the turns) and
    the reply it read (the verdict's `failed_turn`, else the first probe turn's reply, else the first reply)."""
    by_turn = {int(t["turn"]): str(t["content"]) for t in model_turns}
    if turn not in by_turn:
        turn = next((t for t in sorted(probe_turns) if t in by_turn), min(by_turn, default=None))
    reply = by_turn.get(turn, "") if turn is not None else ""
    return {"decided_by": "judge" if use_judge else "rule", "turn": turn,
            "reply": reply if len(reply) <= FAILED_REPLY_CHARS else reply[:FAILED_REPLY_CHARS - 1] + "…",
            "why": ("decided by the judge's marks on this reply" if use_judge else
                    "decided by rule (no judge): the rule scorers found no accepted wording in this reply "
                    "(scoring/statutory_wordings.toml lists each law's)")}


def pick(turn: dict[str, Any], judged: dict[int, dict[str, Any] | None], use_judge: bool, judge_key: str,
         rule_key: str) -> bool | None:
    """A judged turn's mark (None if unreadable) when a judge is used, else the rule's."""
    t = int(turn["turn"])
    if use_judge and t in judged:
        marks = judged[t]
        return None if marks is None else bool(marks[judge_key])
    return bool(turn["marks"].get(rule_key))
