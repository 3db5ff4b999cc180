"""A partial report's label is in the report's language: English until its outline is planned (the fold of its
ReportRequested cannot know the language), then the title's, in the view and in every file of its folder."""

from __future__ import annotations

import json

import pytest

from simreportd.events.models import OutlinePlanned, ReportRequested
from simreportd.events.report_events import OutlineSection, RunSoFar
from simreportd.projections.export import load_report, render
from simreportd.projections.report import ReportView

from .test_folds import SIM, fold

RUN = RunSoFar(rounds={"twitter": 3, "reddit": 2}, actions=412)
REQUESTED = ReportRequested(report_id="r1", **SIM, partial=RUN)


def planned(title: str) -> OutlinePlanned:
    return OutlinePlanned(report_id="r1", title=title, summary="", sections=[OutlineSection(title=title)])


@pytest.mark.parametrize(("title", "label"), [
    ("舆论在第二轮后转向反对", "部分报告：撰写时模拟仍在进行，依据截至 reddit 第 2 轮和 twitter 第 3 轮记录的 412 条行动写成。"
                           "之后的轮次未包含在内。"),
    ("Opinion turned against the plan after round 2",
     "Partial report: written while the simulation was still running, from the 412 actions recorded up to round 2 "
     "on reddit and round 3 on twitter. Later rounds are not included."),
], ids=["zh", "en"])
def test_the_label_follows_the_language_of_the_title_once_the_outline_is_planned(title: str, label: str) -> None:
    conn = fold(ReportView(), [REQUESTED], "report-r1")
    assert load_report(conn, "r1")["partial"].startswith("Partial report: ")  # not known yet: English
    conn = fold(ReportView(), [REQUESTED, planned(title)], "report-r1")
    report = load_report(conn, "r1")
    assert report["partial"] == label
    files = render(report, "<svg/>")
    assert json.loads(files["meta.json"])["partial"] == label
    assert f"> **{label}**" in files["full_report.md"].decode()


def test_a_report_on_a_whole_run_has_no_label_in_any_language() -> None:
    conn = fold(ReportView(), [ReportRequested(report_id="r1", **SIM), planned("舆论转向")], "report-r1")
    report = load_report(conn, "r1")
    assert report["partial"] is None and "partial" not in json.loads(render(report, "")["meta.json"])
