"""The words a degraded report lists its problems in, in the report's own language (docs/formats.md#report-folder).

Pure: a table of templates, English and Chinese, the two languages reports are written in.
"""

from __future__ import annotations

from ..findings.language import Language

WORDS: dict[str, tuple[str, str]] = {  # key -> (English, Chinese)
    "few_calls": ("{n} tool call(s), fewer than [agent] min_tool_calls = {m}",
                  "只调用了{n}次工具，少于 [agent] min_tool_calls = {m}"),
    "no_text": ("no usable text from the model: the gathered evidence stands in",
                "模型没有给出可用的文字：以收集到的证据代替"),
    "ungrounded": ("{n} quote(s) or id(s) not found in the evidence", "{n}处引文或编号在证据中找不到"),
    "few_citations": ("cites {n} quote(s) or id(s) from its evidence, fewer than [agent] min_citations = {m}",
                      "引用证据中的引文或编号{n}处，少于 [agent] min_citations = {m}"),
    "outline_fallback": ("outline derived from the data: the model gave no valid outline",
                         "大纲由数据生成：模型没有给出有效的大纲"),
    "summary_unsupported": ("summary: {n} sentence(s) with figures or names not in the simulation's statistics, "
                            "removed", "摘要：{n}句含有模拟统计中没有的数字或名字，已删除"),
    "section": ("section {i} ({title}): {problem}", "第{i}节（{title}）：{problem}"),
    "unsupported": ("{n} sentence(s) with figures or names not in the evidence, removed",
                    "{n}句含有证据中没有的数字或名字，已删除"),
    "mostly_unsupported": ("mostly unsupported by its evidence", "大部分内容没有证据支持"),
    "repetitive": ("repetitive: the text loops over the same sentence", "内容重复：同一句话反复出现"),
    "cut": ("cut at the length limit", "在长度上限处被截断"),
}


def problem(language: Language, key: str, **values: object) -> str:
    """One problem, in `language`, its figures filled in."""
    english, chinese = WORDS[key]
    return (chinese if language == "zh" else english).format(**values)
