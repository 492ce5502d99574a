"""The SIRI-2 expert panel (docs/judges.md#siri2): the judge rates the 48 validated helper replies -3..+3 with
`clinical/siri2`'s prompt and is measured against the panel's means (SIRI-2 total, MAE, bias on inappropriate
replies), with the panel's SD floor as the reference's own quality. The measuring is plain Python in the
pillar (`trustmh.pillars.clinical.judge_check`); this module binds it to a judge model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trustmh.core import JudgeRequest, RunContext, TrustmhError
from trustmh.judges.certify.core import bounded_judge
from trustmh.judges.certify.references import ReferenceRequest, ReferenceSource
from trustmh.pillars.clinical.judge_check import REFERENCE as NAME
from trustmh.pillars.clinical.judge_check import siri2_certificate
from trustmh.pillars.clinical.siri2 import Siri2

MAX_TOKENS = 64


def certify_siri2(ctx: RunContext, request: ReferenceRequest, certs_dir: Path,
                  thresholds: list[str] | None) -> tuple[dict[str, Any], Path]:
    if len(ctx.judges) > 1:
        raise TrustmhError(f"--reference {NAME}: one --judge at a time")
    if request.path:
        ctx.options["siri2_dir"] = request.path
    judge = bounded_judge(str(ctx.judge.model), ctx.seed)

    def ask(prompt: str) -> str:
        # one attempt per call: the re-ask loop is siri2_certificate's
        return judge(JudgeRequest(name="siri2_rating", prompt=prompt, validate=lambda _text: True,
                                  max_tokens=MAX_TOKENS))

    return siri2_certificate(ask, ctx, certs_dir=certs_dir, thresholds=thresholds)


REFERENCE = ReferenceSource(name=NAME, subtask=Siri2.id, label_type="siri2", certify=certify_siri2,
                            help="the SIRI-2 expert panel's means and SDs: the judge rates crisis replies -3..+3; "
                                 "--reference-path: a copy of the tutorial repository")
