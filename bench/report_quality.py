"""Report quality against the simulator's ground truth.

Run by hand: `python bench/report_quality.py --provider offline --runs 10`, or against any
OpenAI-compatible server: `python bench/report_quality.py --provider openai --base-url
http://127.0.0.1:8080/v1 --model qwen2.5-coder-0.5b --runs 10` (or `-c config.toml` for its
`[llm]` table). Each run simulates a seeded story (`simreportd simulate`, which writes
`ground_truth.json`), ingests it, writes one report and scores it with
`simreportd.simulator.quality`: facts recovered, wrong numbers, hallucinated names, grounded
and ungrounded quotes, requirement questions answered. Prints one row per seed and a total, then
each report's seconds and its kept sentences read back through the claim check (`agent/checks/claims.py`)
with the evidence of their section: every one should be supported. Then, per seed, what the scorer does not
read: the report's status (degraded or not), its wrong relations (who reacted to whom, who is most active,
who changed sides, which camp is largest, which platform led: `agent/checks/relations.py` against every tool result
of the report and the run's context), each question answered by the right kind of evidence (a concern by
an argument's statement, not a round alone; a reaction by statements from the trigger on; platforms by both
platforms' figures), and the ablation: facts recovered once the model's own sentences (guided mode's
"model's reading" lines) are deleted, so what the model adds beyond the engine shows. `--server-pid` (a local model
server's process, Linux) adds the CPU seconds the server spent on each report: on a machine others
share, that over the server's threads is the report's time on an idle one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simreportd.agent.checks import claims, grounding, relations
from simreportd.agent.findings.phrases import EN, ZH
from simreportd.agent.report import guided
from simreportd.daemon.cli.local import completed_generation, running
from simreportd.daemon.config import Config, find_config, load_config
from simreportd.daemon.reports import auto_report_id
from simreportd.daemon.service import Daemon
from simreportd.events.models import ContextGathered, DomainEvent, SectionCompleted, ToolObserved
from simreportd.events.streams import report_stream
from simreportd.simulator.quality import Score, score_report, table
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH


def bench_config(args: argparse.Namespace, root: Path) -> Config:
    """The `[llm]` table of `-c` (or the defaults), with the command line's provider, server and model."""
    config = load_config(find_config(args.config)) if args.config else Config()
    updates = {"provider": args.provider, "base_url": args.base_url, "model": args.model}
    llm = config.llm.model_copy(update={k: v for k, v in updates.items() if v is not None})
    reports = config.reports.model_copy(update={"auto": False})
    config = config.model_copy(update={"llm": llm, "reports": reports})
    return config.with_paths(store=root / "state" / "events.sqlite3", roots=[root / "sims"],
                             output_dir=root / "reports")


@dataclass
class Written:
    """One report as the bench saw it: its Markdown ('' when it failed), seconds, kept sentences rechecked."""

    markdown: str
    seconds: float
    sentences: int
    unsupported: list[str]
    server_cpu: float | None = None
    status: str = "failed"
    wrong_relations: list[str] | None = None


def cpu_seconds(pid: int | None) -> float | None:
    """User and system CPU seconds of process `pid` so far (None without one)."""
    if pid is None:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_report(config: Config, folder: Path, server_pid: int | None = None) -> Written:
    """Ingest `folder`, write its report, and read its sections back through the claim check."""
    started, server_before = time.perf_counter(), cpu_seconds(server_pid)
    async with Daemon(config) as daemon:
        await daemon.watcher.rescan()
        generation = await completed_generation(daemon.store, folder.name)
        report_id = await daemon.reports.request(folder.name, generation, trigger="cli",
                                                 report_id=auto_report_id(folder.name, generation))
        async with running(daemon):
            state = await daemon.reports.wait(report_id)
            seconds, server_after = time.perf_counter() - started, cpu_seconds(server_pid)
            await daemon.views.wait_for(await daemon.store.last_position(), timeout=600)
            await daemon.exporter.export(report_id)
        events = [r.event for r in await daemon.store.read_stream(report_stream(report_id))]
    sentences, unsupported = rechecked(events)
    status = state.verdict.status if state.verdict is not None else "failed"
    server = server_after - server_before if server_after is not None and server_before is not None else None
    markdown = ""
    if state.failed is not None:
        print(f"  {folder.name}: report failed during {state.failed.stage}: {state.failed.error}", file=sys.stderr)
    else:
        markdown = (config.reports.output_dir / report_id / "full_report.md").read_text(encoding="utf-8")
    return Written(markdown, seconds, sentences, unsupported, server, status, wrong_relations(events))


def rechecked(events: list[DomainEvent]) -> tuple[int, list[str]]:
    """(sentences kept in the sections, those whose claims their section's evidence does not support)."""
    context = next((e.context for e in events if isinstance(e, ContextGathered)), None)
    observed = [e for e in events if isinstance(e, ToolObserved)]
    ids = grounding.ids_in([o.result for o in observed])
    count, unsupported = 0, []
    for done in (e for e in events if isinstance(e, SectionCompleted)):
        ev = claims.of_observations([o for o in observed if o.section_index == done.section_index],
                                    claims.background(context), ids)
        verdict = claims.check(done.content, ev)
        count += verdict.sentences
        unsupported += [f"section {done.section_index}: {u.sentence[:80]} ({', '.join(u.claims)})"
                        for u in verdict.unsupported]
    return count, unsupported


def wrong_relations(events: list[DomainEvent]) -> list[str]:
    """The relations the sections state that no tool result of the report (nor the run's context) holds."""
    context = next((e.context for e in events if isinstance(e, ContextGathered)), None)
    observed = [e for e in events if isinstance(e, ToolObserved)]
    roles = claims.of_observations(observed, claims.background(context), grounding.ids_in([o.result for o in observed]))
    return [f"section {done.section_index}: {sentence[:80]} ({', '.join(wrong)})"
            for done in (e for e in events if isinstance(e, SectionCompleted))
            for sentence in claims.sentences(claims.QUOTE_BLOCK.sub("", done.content))
            if (wrong := relations.unsupported(sentence, roles.relations))]


QUESTION_LINE = re.compile(r"^\*\*([^*\n]+[?？])\*\*$", re.M)
POST_REF = re.compile(r"\((?:post|comment):(?:twitter|reddit):\w+\)")
NONE_LINES = (EN["model_added_none"], ZH["model_added_none"], *guided.NO_DRAFT)
MODEL_LINES = re.compile("^(?:" + "|".join(re.escape(t["model_reading"]) for t in (EN, ZH)) + ").*$", re.M)


def answered_by_kind(markdown: str, truth: dict[str, Any]) -> list[tuple[str, bool]]:
    """Each requirement question with whether the text under it holds evidence of the kind it asks for."""
    parts = QUESTION_LINE.split(markdown.split("\n## ")[-1])
    blocks = {q.strip(): body.split("\n## ")[0] for q, body in zip(parts[1::2], parts[2::2], strict=True)}
    return [(q["question"], right_kind(q, blocks.get(q["question"].strip(), ""), truth)) for q in truth["questions"]]


def right_kind(question: dict[str, Any], block: str, truth: dict[str, Any]) -> bool:
    """A concern answered by an argument's statement (not by a round alone), a reaction by what was said from the trigger
    on, a platform question by both platforms' figures."""
    said = [truth["statements"].get(ref.strip("()"), {}) for ref in POST_REF.findall(block)]
    if "argument" in question["facts"]:
        return any(s.get("argument") for s in said)
    if "divergence" in question["facts"]:
        return all(p in block for p in ("Twitter", "Reddit")) and bool(re.search(r"\d", block))
    return bool(re.search(r"\d", block)) and all(s.get("round", 0) >= truth["trigger"]["round"] for s in said)


def ablated(markdown: str) -> str:
    """The report without the model's own sentences (guided mode marks them), the engine's statements kept."""
    return MODEL_LINES.sub("", markdown)


def readings(written: list[tuple[int, Written]], truths: dict[int, dict[str, Any]]) -> str:
    """Per seed: status, wrong relations, questions by the right kind of evidence, facts without the model."""
    rows = ["| seed | status | wrong relations | questions by the right kind of evidence | "
            "facts with the model's sentences deleted (ablation) | the report on what the model added |",
            "|---|---|---|---|---|---|"]
    for seed, w in written:
        truth = truths[seed]
        kinds = answered_by_kind(w.markdown, truth)
        full, bare = score_report(w.markdown, truth).recovered, score_report(ablated(w.markdown), truth).recovered
        rows.append(f"| {seed} | {w.status} | {len(w.wrong_relations or [])} | {sum(ok for _, ok in kinds)}/{len(kinds)}"
                    f" | {bare} of {full} (the model adds {full - bare}) | {model_word(w.markdown)} |")
    notes = [f"seed {seed}: wrong relation {line}" for seed, w in written for line in w.wrong_relations or []]
    notes += [f"seed {seed}: answered by the wrong kind of evidence: {q}" for seed, w in written
              for q, ok in answered_by_kind(w.markdown, truths[seed]) if not ok]
    return "\n".join(rows + ([""] + notes if notes else []))


def model_word(markdown: str) -> str:
    """What a guided report says the model added: its reading in some sections, or none (said in every section and
    at its end); "not said" when a section shows neither."""
    sections = markdown.split("\n## ")[1:]
    reading = sum(bool(MODEL_LINES.search(s)) for s in sections)
    none = sum(any(t in s for t in NONE_LINES) for s in sections)
    closings = (guided.REPORT_NONE, guided.REPORT_ADDED)
    closing = next((i for i, lines in enumerate(closings) if any(t in markdown for t in lines)), None)
    if closing is None and not reading and not none:
        return "-"
    said = "ends saying none" if closing == 0 else "ends saying where" if closing == 1 else "ends saying nothing"
    return f"reading in {reading}, none said in {none} of {len(sections)} sections; {said}"


async def main(args: argparse.Namespace) -> None:
    scores: list[tuple[int, Score]] = []
    written: list[tuple[int, Written]] = []
    truths: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp).resolve()
        config = bench_config(args, root)
        started = time.perf_counter()
        for seed in range(args.first_seed, args.first_seed + args.runs):
            folder = root / "sims" / f"sim_seed{seed}"
            simulate(folder, agents=args.agents, rounds=args.rounds, seed=seed, style=args.style)
            written.append((seed, await one_report(config, folder, args.server_pid)))
            truths[seed] = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
            scores.append((seed, score_report(written[-1][1].markdown, truths[seed])))
        elapsed = time.perf_counter() - started
    writer = config.llm.model if config.llm.resolved_provider() == "openai" else "offline writer"
    print(f"Report quality: {writer} ({config.llm.resolved_provider()}), {args.runs} seeds from {args.first_seed}, "
          f"{args.agents} agents x {args.rounds} rounds, {args.style} style, {elapsed:.1f} s\n")
    print(table(scores))
    print("\n| seed | seconds | server CPU seconds | kept sentences with unsupported claims |\n|---|---|---|---|")
    for seed, w in written:
        cpu = "-" if w.server_cpu is None else f"{w.server_cpu:.0f}"
        print(f"| {seed} | {w.seconds:.0f} | {cpu} | {len(w.unsupported)} of {w.sentences} |")
    for seed, w in written:
        for line in w.unsupported:
            print(f"seed {seed}: unsupported {line}")
    print("\n" + readings(written, truths))
    facts = sum(len(s.facts) for _, s in scores)
    share = sum(s.recovered for _, s in scores) / max(facts, 1)
    wrong = sum(len(s.wrong_numbers) for _, s in scores)
    invented = sum(len(s.hallucinated) for _, s in scores)
    met = share >= 0.9 and wrong == 0 and invented == 0
    print(f"\nGoal (>= 90% facts recovered, 0 wrong numbers, 0 hallucinated names): {'met' if met else 'NOT met'}")
    # what a small local model must reach (docs/guide.md#with-a-real-weak-local-model)
    if config.llm.resolved_provider() == "openai":
        asked = [ok for _, s in scores for _, ok in s.questions]
        small = (share >= 0.6 and wrong == 0 and invented == 0 and sum(asked) >= 0.5 * len(asked)
                 and all(not w.unsupported and w.seconds <= 600 for _, w in written))
        print("Small-model goal (>= 60% facts, 0 wrong numbers, 0 hallucinated names, every kept sentence "
              f"supported, >= 50% questions answered, <= 600 s a report): {'met' if small else 'NOT met'}")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--provider", choices=["offline", "openai"], default="offline")
    p.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", help="the model name sent to the server")
    p.add_argument("-c", "--config", help="a config.toml whose [llm] and [agent] tables to use")
    p.add_argument("--server-pid", type=int, help="the local model server's process id: its CPU seconds per report")
    p.add_argument("--style", choices=["catalogue", "llm"], default="catalogue",
                   help="the simulator's style: catalogue sentences, or statements written anew as LLM agents write them")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--agents", type=int, default=40)
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--keep", help="write simulations, store and reports under this folder instead of a temporary one")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
