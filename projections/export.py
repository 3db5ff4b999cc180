"""Render the MiroFish-compatible report folder (docs/formats.md#report-folder) from the report view.

`load_report` reads the rows; `render` is pure: rows in, `{file name: bytes}` out. The daemon
writes the files; `rebuild` and `export` render the same bytes from the same rows. The folder
is one MiroFish's own `ReportManager` (`backend/app/services/report_agent.py`) loads: `meta.json`
is its `Report.to_dict()` with MiroFish's five statuses, our quality verdict in fields of its own.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from . import report_queries
from .report import title_language
from .standing import mirofish_status, shown_progress


def load_report(conn: sqlite3.Connection, report_id: str) -> dict[str, Any] | None:
    """The report row with its sections and agent-log lines, or None if unknown."""
    report = report_queries.report_row(conn, report_id)
    if report is None:
        return None
    del report["partial_labels"]  # the fold's: `partial` is the label in the report's language
    report["sections"] = report_queries.sections(conn, report_id)
    report["log"] = report_queries.agent_log(conn, report_id)
    report["console"] = report_queries.console_log(conn, report_id)
    return report


# The words the files add around the report's own text, in the report's language (`title_language`). The
# problems themselves are the checks' words, in English.
WORDS = {
    "en": {"this_report": "This report", "this_section": "This section",
           "warning": ("> **Warning: {what} is degraded**: it did not meet simreportd's quality rules, so check it "
                       "against the simulation before relying on it."),
           "more": "and {n} more (meta.json lists them all)", "summary": "**Summary.**",
           "chart": "Actions per round on each platform, turning points circled, divergence shaded"},
    "zh": {"this_report": "本报告", "this_section": "本节",
           "warning": "> **警告：{what}未达到 simreportd 的质量规则**，使用前请对照模拟数据核实。",
           "more": "另有 {n} 条（meta.json 列出全部）", "summary": "**摘要。**",
           "chart": "各平台每轮的行动数，转折点以圆圈标出，分歧以阴影标出"},
}


def words(report: dict[str, Any]) -> dict[str, str]:
    """The file's own words in the report's language: Chinese when its title has Han characters."""
    return WORDS[title_language(report.get("title"))]


def notice(report: dict[str, Any], section: dict[str, Any] | None = None) -> str:
    """The warning a degraded report's files open with, naming what failed ('' for a report that met the rules).

    Shown in every Markdown file a reader opens (full_report.md, each section_NN.md), not only in meta.json:
    a reader of the text alone must know which parts not to trust. A section's file names its own problems.
    """
    if report.get("status") != "completed_degraded":
        return ""
    say = words(report)
    own = json.loads(section.get("problems") or "[]") if section is not None else []
    problems = own or json.loads(report.get("problems") or "[]")
    what = say["this_section"] if own else say["this_report"]
    listed = "".join(f"\n> - {p}" for p in problems[:12])
    more = f"\n> - {say['more'].format(n=len(problems) - 12)}" if len(problems) > 12 else ""
    return f"{say['warning'].format(what=what)}{listed}{more}\n"


def section_markdown(section: dict[str, Any], report: dict[str, Any] | None = None) -> str:
    """`## title`, the degraded report's notice (when `report` is given), then the section's text."""
    warning = notice(report, section) if report is not None else ""
    return f"## {section['title']}\n\n{warning + chr(10) if warning else ''}{(section['content'] or '').strip()}\n"


def full_markdown(report: dict[str, Any]) -> str:
    """`# title`, the notice of a degraded report, the summary as a paragraph, `---`, the completed sections."""
    warning, say = notice(report), words(report)
    parts = [f"# {report['title'] or report['report_id']}\n",
             f"> **{report['partial']}**\n" if report.get("partial") else "",
             warning,
             f"{say['summary']} {report['summary']}\n" if report["summary"] else "",
             f"![{say['chart']}](activity.svg)\n",
             "---\n"]
    parts += [section_markdown(s) for s in report["sections"] if s["status"] == "completed"]
    return "\n".join(p for p in parts if p)


def outline(report: dict[str, Any]) -> dict[str, Any] | None:
    """MiroFish's `ReportOutline.to_dict()`: title, summary, sections with their content (None before planning)."""
    if not report["sections"]:
        return None
    return {"title": report["title"], "summary": report["summary"],
            "sections": [{"title": s["title"], "content": s["content"] or "", "subsections": []}
                         for s in report["sections"]]}


def meta(report: dict[str, Any]) -> dict[str, Any]:
    """MiroFish's `Report.to_dict()` (what its ReportManager loads and its API answers), then our own fields:
    `quality` (`ok` or `degraded`, with the `problems`), `progress`, and for a partial report its notice."""
    return {"report_id": report["report_id"], "simulation_id": report["simulation_id"],
            "graph_id": report.get("graph_id") or "", "simulation_requirement": report.get("requirement") or "",
            "status": mirofish_status(report["status"]), "outline": outline(report),
            "markdown_content": full_markdown(report) if report["sections"] else "",
            "created_at": report["created_at"], "completed_at": report["completed_at"] or "", "error": report["error"],
            "quality": "degraded" if report["status"] == "completed_degraded" else "ok",
            "problems": json.loads(report.get("problems") or "[]"),
            "progress": shown_progress(report["status"], report["progress"]),
            **({"partial": report["partial"]} if report.get("partial") else {})}


def progress(report: dict[str, Any]) -> dict[str, Any]:
    """progress.json, as MiroFish's `ReportManager.update_progress` writes it: the current section by title."""
    titles = {s["section_index"]: s["title"] for s in report["sections"]}
    return {"status": mirofish_status(report["status"]), "progress": shown_progress(report["status"], report["progress"]),
            "message": report["message"], "current_section": titles.get(report["current_section"]),
            "completed_sections": [s["title"] for s in report["sections"] if s["status"] == "completed"],
            "updated_at": report["updated_at"]}


def render(report: dict[str, Any], chart: str) -> dict[str, bytes]:
    """Every file of the report folder; `chart` is its run's `activity_chart`."""
    completed = [s for s in report["sections"] if s["status"] == "completed"]
    files = {
        "meta.json": _json(meta(report)), "progress.json": _json(progress(report)),
        "agent_log.jsonl": "".join(line + "\n" for line in report["log"]).encode("utf-8"),
        "console_log.txt": "".join(line + "\n" for line in report["console"]).encode("utf-8"),
        "full_report.md": full_markdown(report).encode("utf-8"),
        "activity.svg": chart.encode(),
    }
    if (planned := outline(report)) is not None:
        files["outline.json"] = _json(planned)
    for s in completed:
        files[f"section_{s['section_index']:02d}.md"] = section_markdown(s, report).encode("utf-8")
    return files


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
