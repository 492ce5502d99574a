"""HTML reports: one page per run, one comparison page across runs. Every piece of text that came from a
model, a judge, a dataset or a file is escaped (`esc`); plots are inline PNGs, so a page is one file."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from trustmh.catalogue import BY_ID, PILLAR_TITLES, PILLARS
from trustmh.core import SMALL_N, Record

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d1d1f;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
h3{margin-top:1.6rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.92rem}
th,td{border:1px solid #ddd;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f5f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{background:#fff4e5;border:1px solid #f0b45b;padding:.7rem 1rem;border-radius:6px;margin:1rem 0}
.nc{color:#8a5a00}.err{color:#b00020}.muted{color:#666;font-size:.88rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;padding:.5rem;border-radius:4px;
max-height:18rem;overflow:auto;font-size:.85rem}
details{margin:.4rem 0}summary{cursor:pointer}
.cm td{text-align:right;min-width:2.2rem}.cm td.hi{background:#dbeafe}
.wide{overflow-x:auto}
"""


def esc(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return '<span class="nc">not computed</span>'
    if isinstance(x, bool):
        return esc(x)
    if isinstance(x, int):
        return esc(x)
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return esc(x)


def fmt_ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{_CSS}</style></head><body>{body}</body></html>\n")


def png_data_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _pillar_plot(pillars: Mapping[str, Any]) -> str | None:
    names = [p for p in PILLARS if p in pillars]
    if not names:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 0.8))
    vals = [pillars[p]["normalised"] for p in names]
    ys = range(len(names))
    ax.barh(list(ys), [v if v is not None else 0 for v in vals],
            color=["#3b82f6" if v is not None else "#ddd" for v in vals])
    for y, v in zip(ys, vals, strict=True):
        ax.text(0.01 if v is None else min(v + 0.01, 0.9), y, "not computed" if v is None else f"{v:.2f}",
                va="center", fontsize=8)
    ax.set_yticks(list(ys), [PILLAR_TITLES[p] for p in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("normalised score (0 = anchor worst, 1 = anchor best)")
    return png_data_uri(fig)


def _confusion_table(cm: Mapping[str, Any]) -> str:
    labels = cm.get("labels") or []
    matrix = cm.get("matrix") or []
    head = "".join(f"<th>{esc(lab)}</th>" for lab in labels)
    rows = []
    for i, (lab, row) in enumerate(zip(labels, matrix, strict=False)):
        cells = "".join(f'<td class="{"hi" if i == j else ""}">{esc(v)}</td>' for j, v in enumerate(row))
        rows.append(f"<tr><th>{esc(lab)}</th>{cells}</tr>")
    return (f'<table class="cm"><tr><th>gold \\ predicted</th>{head}</tr>{"".join(rows)}</table>')


def _metrics_html(metrics: Mapping[str, Any]) -> str:
    flat = []
    structured = []
    for name, value in sorted(metrics.items()):
        if isinstance(value, Mapping) and "matrix" in value and "labels" in value:
            structured.append(f"<h4>{esc(name)}</h4>{_confusion_table(value)}")
        elif isinstance(value, Mapping | list):
            structured.append(f"<details><summary>{esc(name)}</summary><pre>"
                              f"{esc(json.dumps(value, indent=1, ensure_ascii=False))}</pre></details>")
        else:
            flat.append(f"<tr><td>{esc(name)}</td><td class=\"num\">{fmt(value)}</td></tr>")
    table = f"<table><tr><th>metric</th><th>value</th></tr>{''.join(flat)}</table>" if flat else ""
    return table + "".join(structured)


def _transcripts(records: Sequence[Record], k: int = 3) -> str:
    parts = []
    for rec in records[:k]:
        score = {key: v for key, v in rec.score.items() if not isinstance(v, dict | list)}
        judge = "".join(f"<p class=\"muted\">judge ({esc(name)}):</p><pre>{esc(text)}</pre>"
                        for name, text in (rec.judge_raw or {}).items())
        turns = rec.metadata.get("turns") if isinstance(rec.metadata, dict) else None
        # a conversation: turn by turn, each with who spoke and its per-turn marks (all escaped)
        reply = ("".join(f"<p class=\"muted\">turn {esc(t.get('turn'))} · {esc(t.get('role'))} "
                         f"({esc(t.get('model'))}) {esc(json.dumps(t.get('marks') or {}, ensure_ascii=False))}"
                         f"</p><pre>{esc(t.get('content'))}</pre>" for t in turns if isinstance(t, dict))
                 if isinstance(turns, list) and turns else f"<p class=\"muted\">reply:</p><pre>{esc(rec.response)}</pre>")
        parts.append(f"<details><summary>item {esc(rec.item_id)} (epoch {esc(rec.epoch)})</summary>"
                     f"{reply}{judge}"
                     f"<p class=\"muted\">score:</p><pre>{esc(json.dumps(score, ensure_ascii=False))}</pre>"
                     f"</details>")
    return "".join(parts)


def _gate_section(results: Mapping[str, Any]) -> str:
    """The release gate under trustmh's default policy (`trustmh gate RUN_DIR --policy FILE` for yours)."""
    from trustmh.gate import evaluate, load_policy

    gate = evaluate(dict(results), load_policy())
    rows = "".join(
        f"<tr><td>{esc(r.get('title') or r['id'])}</td><td class=\"num\">{esc(r['severity'])}</td>"
        f"<td class=\"num\">{fmt(r['value'])}</td><td>{fmt_ci(r['ci'])}</td>"
        f"<td>{esc(' '.join(f'{k} {v}' for k, v in r['limit'].items()))}</td>"
        f"<td><b>{esc(r['verdict'])}</b></td><td>{esc(r['reason'])}</td></tr>" for r in gate["checks"])
    return (f"<h2>Release gate: {esc(gate['verdict'].upper())}</h2><p class=\"muted\">Policy "
            f"{esc(gate['policy']['version'])}: {esc(gate['policy']['note'])}. Limits apply to the bound of the "
            "95% interval that protects users. Run <code>trustmh gate RUN_DIR --policy FILE</code> for your own "
            "policy, gate.json and a model-card summary.</p><div class=\"wide\"><table><tr><th>check</th>"
            "<th>severity</th><th>value</th><th>95% CI</th><th>limit</th><th>verdict</th><th>why</th></tr>"
            f"{rows}</table></div>")


def run_report_html(results: Mapping[str, Any], records: Mapping[str, Sequence[Record]] | None = None) -> str:
    records = records or {}
    judge = results.get("judge") or {}
    body = [f"<h1>trustmh report: {esc(results['model'])}</h1>",
            f"<p class=\"muted\">suite {esc(results['suite'])} · mode {esc(results['mode'])} · seed "
            f"{esc(results['seed'])} · trustmh {esc(results.get('trustmh_version'))} · anchors "
            f"{esc(results.get('anchors_version'))} · created {esc(results.get('created'))}</p>"]
    if results.get("model_reported"):
        body.append(f"<p class=\"muted\">provider-reported model: {esc(results['model_reported'])}</p>")
    if results.get("notice"):
        label = "Demonstration." if results.get("suite") == "starter" else "Note."
        body.append(f"<div class=\"banner\"><b>{label}</b> {esc(results['notice'])}</div>")
    if judge.get("model"):
        flag = "validated" if judge.get("validated") else "NOT validated: judge-based numbers are a demo only"
        body.append(f"<p>Judge: <b>{esc(judge['model'])}</b> ({esc(flag)}), temperature "
                    f"{esc(judge.get('temperature'))}, seed {esc(judge.get('seed'))}.</p>")
    else:
        body.append("<p>No judge configured: judge-scored metrics are not computed; rule-based fallbacks "
                    "are labelled as such.</p>")
    if results.get("errors"):
        items = "".join(f"<li>{esc(e)}</li>" for e in results["errors"])
        body.append(f"<div class=\"banner err\"><b>Errors</b><ul>{items}</ul></div>")

    overall = results.get("overall") or {}
    body.append("<h2>Overall</h2>")
    partial = " (partial: covers " + esc(overall.get("n_pillars")) + " of " + esc(
        overall.get("n_pillars_total")) + " pillars)" if overall.get("partial") else ""
    body.append(f"<p>Normalised overall score: <b>{fmt(overall.get('normalised'))}</b>{partial}. "
                f"Each sub-task is mapped to 0–1 between fixed anchors (chance or worst → best), pillars "
                f"average their sub-tasks, the overall averages the pillars.</p>")
    plot = _pillar_plot(results.get("pillars") or {})
    if plot:
        body.append(f'<img alt="pillar scores" src="{plot}">')
    rows = []
    for pillar in PILLARS:
        p = (results.get("pillars") or {}).get(pillar)
        if p is None:
            continue
        rows.append(f"<tr><td>{esc(PILLAR_TITLES[pillar])}</td><td class=\"num\">{fmt(p['normalised'])}</td>"
                    f"<td class=\"num\">{esc(p['n_subtasks'])}/{esc(p['n_subtasks_total'])}</td></tr>")
    body.append("<table><tr><th>pillar</th><th>normalised</th><th>sub-tasks computed</th></tr>"
                + "".join(rows) + "</table>")

    body.append(_gate_section(results))
    body.append("<h2>Sub-tasks</h2>")
    rows = []
    for sid, sub in results["subtasks"].items():
        status = "" if sub["status"] == "ok" else (f'<span class="nc">{esc(sub["status"])}: '
                                                  f'{esc(sub.get("reason"))}</span>')
        if sub.get("small_n"):
            status += f' <span class="nc">small n (&lt; {SMALL_N} items): indicative only</span>'
        arrow = "↑" if sub["direction"] == "higher" else "↓"
        title = BY_ID[sid].title if sid in BY_ID else sid
        rows.append(f"<tr><td><a href=\"#{esc(sid)}\">{esc(sid)}</a><br><span class=\"muted\">{esc(title)}"
                    f"</span></td><td class=\"num\">{fmt(sub['value'])} {arrow}</td><td>{fmt_ci(sub['ci'])}</td>"
                    f"<td class=\"num\">{esc(sub['n'])}</td><td class=\"num\">{esc(sub['n_invalid'])}</td>"
                    f"<td>{esc(sub.get('method') or '')}</td><td>{status}</td></tr>")
    body.append("<table><tr><th>sub-task</th><th>value</th><th>95% CI (seeded bootstrap)</th><th>n</th>"
                "<th>invalid</th><th>method</th><th>status</th></tr>" + "".join(rows) + "</table>")

    for sid, sub in results["subtasks"].items():
        body.append(f"<h3 id=\"{esc(sid)}\">{esc(sid)}</h3>")
        if sub.get("judge"):
            j = sub["judge"]
            body.append(f"<p class=\"muted\">judge: {esc(j.get('model'))} "
                        f"({'validated' if j.get('validated') else 'unvalidated'})</p>")
        for note in sub.get("notes") or []:
            body.append(f"<p class=\"muted\">• {esc(note)}</p>")
        body.append(_metrics_html(sub.get("metrics") or {}))
        recs = records.get(sid) or []
        if recs:
            body.append(f"<p class=\"muted\">Sample transcripts ({min(3, len(recs))} of {len(recs)}; all in "
                        f"items.jsonl and logs/):</p>{_transcripts(recs)}")
    body.append("<p class=\"muted\">Open the full transcripts with <code>inspect view --log-dir logs</code>.</p>")
    return page(f"trustmh: {results['model']}", "\n".join(body))


def comparison_report_html(board: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> str:
    models = board["models"]
    body = ["<h1>trustmh comparison</h1>",
            f"<p class=\"muted\">{len(models)} runs · modes {esc(', '.join(board['modes']))}</p>",
            "<table><tr><th>run</th><th>model</th><th>folder</th><th>seed</th><th>date</th><th>suite</th></tr>"
            + "".join(f"<tr><td>{esc(m)}</td><td>{esc(r.get('model'))}</td><td>{esc(r.get('folder'))}</td>"
                      f"<td>{esc(r.get('seed'))}</td><td>{esc(r.get('created'))}</td><td>{esc(r.get('suite'))}</td>"
                      "</tr>" for m, r in (board.get("runs") or {}).items()) + "</table>"]
    for note in board.get("notes") or []:
        body.append(f"<div class=\"banner\">{esc(note)}</div>")
    head = "".join(f"<th>{esc(m)}</th>" for m in models)
    body.append("<h2>Overall</h2><table><tr><th></th>" + head + "</tr>")
    body.append("<tr><td>normalised overall</td>" + "".join(
        f"<td class=\"num\">{fmt(board['overall_normalised'].get(m))}</td>" for m in models) + "</tr>")
    body.append("<tr><td>mean pillar rank (original scheme)</td>" + "".join(
        f"<td class=\"num\">{fmt(board['overall_mean_rank'].get(m), 2)}</td>" for m in models) + "</tr>")
    body.append("<tr><td>pillars covered</td>" + "".join(
        f"<td class=\"num\">{sum(v is not None for v in (board['pillar_normalised'].get(m) or {}).values())}"
        f"/{len(PILLARS)}</td>" for m in models) + "</tr></table>")
    covered = {m: tuple(sorted(p for p, v in (board["pillar_normalised"].get(m) or {}).items() if v is not None))
               for m in models}
    if len(set(covered.values())) > 1:
        body.append("<p class=\"banner\">The runs cover different pillars: overall scores and mean ranks "
                    "are only comparable between runs with the same coverage.</p>")
    body.append("<h2>Pillars</h2><table><tr><th>pillar</th>" + head + "</tr>")
    for pillar in PILLARS:
        if not any(pillar in (board["pillar_normalised"].get(m) or {}) for m in models):
            continue  # no run evaluated this pillar
        cells = []
        for m in models:
            pillars_of_run = board["pillar_normalised"].get(m) or {}
            if pillar not in pillars_of_run:
                cells.append("<td class=\"muted\">—</td>")
                continue
            rank = (board["pillar_mean_rank"].get(pillar) or {}).get(m)
            cells.append(f"<td class=\"num\">{fmt(pillars_of_run[pillar])}<br><span class=\"muted\">rank "
                         f"{fmt(rank, 2)}</span></td>")
        body.append(f"<tr><td>{esc(PILLAR_TITLES[pillar])}</td>{''.join(cells)}</tr>")
    body.append("</table><h2>Sub-tasks</h2><table><tr><th>sub-task</th>" + head + "</tr>")
    for sid, entry in board["subtasks"].items():
        cells = []
        for m, run in zip(models, runs, strict=True):
            sub = run["subtasks"].get(sid)
            if sub is None:
                cells.append("<td>—</td>")
                continue
            rank = entry["ranks"].get(m)
            cells.append(f"<td class=\"num\">{fmt(sub['value'])}<br><span class=\"muted\">{fmt_ci(sub['ci'])}"
                         f" · rank {fmt(rank, 1)}</span></td>")
        arrow = "↑" if entry["direction"] == "higher" else "↓"
        body.append(f"<tr><td>{esc(sid)} {arrow}</td>{''.join(cells)}</tr>")
    body.append("</table><p class=\"muted\">Ranks: 1 = best, ties averaged. Intervals: seeded bootstrap "
                "(see each run's results.json).</p>")
    return page("trustmh comparison", "\n".join(body))
