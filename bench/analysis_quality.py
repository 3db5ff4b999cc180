"""How well the analysis reads what agents wrote, against the simulator's truth (`simulate --style llm`).

Run by hand: `python bench/analysis_quality.py --runs 10` writes ten seeded simulations in the llm style
(every statement different, English and Chinese), ingests each, runs the analysis the report tools run
(`[embeddings]` of `-c`, or the bundled embedder) and scores it against `ground_truth.json`:
- arguments: cluster purity (statements in a found group that share its most common true argument), and
  for each true argument of >= 5 statements, the share of them its largest found group holds (>= 80%: found);
- stance: the share of statements whose stance (their argument's camp) is the true one;
- side changes: precision and recall of the agents found to change sides;
- retrieval: for the truth's 20 questions a seed, whether a statement answering it is in the top 5 of the
  search the tools run (same language and across languages apart);
- cost: CPU seconds of the analysis per 1,000 statements (embedding included, cache cold).
With `--label-with URL --model M --cap N`, an OpenAI-compatible server labels up to N statements a seed as a
report with `[agent] stance_labels = N` has it do (the same sample, prompts and strict reading), and the
analysis is scored with those labels; the labels' own accuracy is printed too.
Prints one row per seed and the totals.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from simreportd.agent.report import stance_labels
from simreportd.agent.tools.camps import camps_from_sayings, statement_stances
from simreportd.agent.tools.simulation_tools import SimulationTools, labelled_by_wording
from simreportd.daemon.cli.local import running
from simreportd.daemon.config import Config, find_config, load_config
from simreportd.daemon.service import Daemon
from simreportd.projections import simulation_queries
from simreportd.projections.sqlite import reading
from simreportd.projections.tallies import argument_key
from simreportd.simulator.simulate import simulate
from simreportd.simulator.truth import FILE as GROUND_TRUTH


async def ingest(config: Config) -> None:
    async with Daemon(config) as daemon:
        await daemon.watcher.rescan()
        async with running(daemon):
            await daemon.views.wait_for(await daemon.store.last_position(), timeout=600)


def score(conn: Any, key: tuple[str, int], tools: SimulationTools, truth: dict[str, Any],
          labels: dict[str, str]) -> dict[str, Any]:
    """The seed's figures: purity, arguments found, stance accuracy, shifts, retrieval hits."""
    started = time.process_time()
    camps, wordings = tools._analysed(conn, key)
    seconds = time.process_time() - started
    meaning = wordings.meaning
    rows = simulation_queries.sayings(conn, key)
    by_wording = labelled_by_wording(conn, key, labels)
    if labels:
        camps = camps_from_sayings(rows, meaning=meaning, labels=by_wording, off_topic=wordings.off_topic)
    placed = statement_stances(rows, meaning, by_wording, off_topic=wordings.off_topic)
    posts = conn.execute("SELECT ref, agent_id, content FROM sim_posts WHERE simulation_id = ? AND generation = ?"
                         " AND kind IN ('post', 'quote', 'comment')", key).fetchall()
    statements = truth["statements"]
    group, stance = {}, {}
    for ref, agent, content in posts:
        if ref in statements:
            wording = argument_key(content or "")
            group[ref] = meaning.get(wording, wording)
            stance[ref] = placed.get((agent, wording), "")
    by_group: dict[str, Counter[str]] = {}
    for ref, g in group.items():
        by_group.setdefault(g, Counter())[statements[ref]["argument"]] += 1
    purity = sum(c.most_common(1)[0][1] for c in by_group.values()) / max(len(group), 1)
    arguments: dict[str, Counter[str]] = {}
    for ref, g in group.items():
        arguments.setdefault(statements[ref]["argument"], Counter())[g] += 1
    big = {a: c for a, c in arguments.items() if sum(c.values()) >= 5 and a != "chatter"}
    found = sum(c.most_common(1)[0][1] >= 0.8 * sum(c.values()) for c in big.values())
    right = sum(stance[r] == statements[r]["stance"] for r in group)
    true_shifts = {s["id"] for s in truth["shifts"]}
    got_shifts = {s["agent_id"] for s in camps["stance_shifts"]}
    hits: dict[bool, list[bool]] = {True: [], False: []}
    for q in truth.get("retrieval", []):
        results = tools.reader.search(conn, key, q["question"], 5, None, wordings)
        hits[q["language"] != truth["language"]].append(bool({r["ref"] for r in results} & set(q["answers"])))
    truly = {ref: statements[ref]["stance"] or stance_labels.NONE for ref in labels if ref in statements}
    return {"labelled": len(labels), "labels_right": sum(labels[r] == t for r, t in truly.items()),
            "statements": len(group), "purity": purity, "found": found, "big": len(big), "stance_right": right,
            "shifts_true": len(true_shifts), "shifts_got": len(got_shifts), "shifts_hit": len(true_shifts & got_shifts),
            "same": hits[False], "across": hits[True], "cpu": seconds, "language": truth["language"]}


async def one_seed(args: argparse.Namespace, root: Path, seed: int) -> dict[str, Any]:
    folder = root / f"seed{seed}" / "sims" / f"sim_seed{seed}"
    if not (folder / GROUND_TRUTH).exists():
        simulate(folder, agents=args.agents, rounds=args.rounds, seed=seed, style="llm")
    base = load_config(find_config(args.config)) if args.config else Config()
    config = base.with_paths(store=folder.parent.parent / "state" / "events.sqlite3", roots=[folder.parent],
                             output_dir=folder.parent.parent / "reports")
    await ingest(config)
    truth = json.loads((folder / GROUND_TRUTH).read_text(encoding="utf-8"))
    tools = SimulationTools(config.store.path.with_name("events-views.sqlite3"),
                            reader=config.embeddings.reader(config.store.path))
    with reading(tools.views_path) as conn:
        key = (folder.name, simulation_queries.latest_generation(conn, folder.name)[0])  # type: ignore[index]
        declared = simulation_queries.stance_counts(conn, key)
    labels = await labelled(args, tools, key, truth["requirement"], declared) if args.label_with else {}
    with reading(tools.views_path) as conn:
        return score(conn, key, tools, truth, labels)


async def labelled(args: argparse.Namespace, tools: SimulationTools, key: tuple[str, int], requirement: str,
                   declared: dict[str, int]) -> dict[str, str]:
    """The labels a model gives the seed's sample, asked and read as a report asks and reads them."""
    import openai

    client = openai.AsyncOpenAI(base_url=args.label_with, api_key="none", max_retries=1, timeout=600)
    stances = stance_labels.plain_stances(declared)
    chosen, _ = await tools.sample(*key, args.cap)
    labels: dict[str, str] = {}
    for batch in stance_labels.batches(chosen):
        extra = {"response_format": stance_labels.response_format(args.format, stances, len(batch))}
        reply = await client.chat.completions.create(
            model=args.model, messages=stance_labels.messages(requirement, stances, batch),  # type: ignore[arg-type]
            temperature=0, max_tokens=60 * len(batch), extra_body={k: v for k, v in extra.items() if v})
        labels.update(stance_labels.read_labels(reply.choices[0].message.content or "", batch, stances)[0])
    return labels


def row(seed: int, s: dict[str, Any]) -> str:
    share = lambda hits: f"{sum(hits)}/{len(hits)}" if hits else "-"  # noqa: E731
    return (f"| {seed} ({s['language']}) | {s['labels_right']}/{s['labelled']} | {s['statements']} | "
            f"{s['purity']:.2f} | {s['found']}/{s['big']} | "
            f"{s['stance_right'] / max(s['statements'], 1):.0%} | {s['shifts_hit']}/{s['shifts_got']} found, "
            f"{s['shifts_hit']}/{s['shifts_true']} true | {share(s['same'])} | {share(s['across'])} | "
            f"{1000 * s['cpu'] / max(s['statements'], 1):.1f} |")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp).resolve()
        scores = [(seed, await one_seed(args, root, seed)) for seed in range(args.first_seed, args.first_seed + args.runs)]
    print(f"Analysis quality: {args.runs} seeds from {args.first_seed}, {args.agents} agents x {args.rounds} rounds, llm style\n")
    print("| seed | labels right | statements | purity | arguments found | stance right | side changes | "
          "retrieval top 5 | across languages | CPU s per 1k statements |\n|---|---|---|---|---|---|---|---|---|---|")
    for seed, s in scores:
        print(row(seed, s))
    total = {k: sum(s[k] for _, s in scores) for k in ("labelled", "labels_right", "statements", "found", "big",
                                                        "stance_right", "shifts_true", "shifts_got", "shifts_hit", "cpu")}
    total.update(purity=sum(s["purity"] * s["statements"] for _, s in scores) / max(total["statements"], 1),
                 same=[h for _, s in scores for h in s["same"]], across=[h for _, s in scores for h in s["across"]],
                 language="all")
    print(row(0, total).replace("| 0 (all)", "| **all**"))


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-c", "--config", help="a config.toml whose [embeddings] table to use")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--agents", type=int, default=40)
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--keep", help="write (or reuse) simulations and stores under this folder")
    p.add_argument("--label-with", metavar="URL", help="an OpenAI-compatible server (…/v1) that labels stances")
    p.add_argument("--model", default="", help="the model name sent to --label-with")
    p.add_argument("--cap", type=int, default=100, help="statements a seed may have labelled ([agent] stance_labels)")
    p.add_argument("--format", default="json_object", choices=("off", "json_object", "json_schema"),
                   help="structured output asked of --label-with ([agent] response_format)")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
