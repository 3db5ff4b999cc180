"""Questions asked in another language than the posts (docs/architecture.md#meaning).

A multilingual embedder puts every text of one language a little to one side: a Chinese question is
nearer the English posts that are near everything Chinese than those that answer it. Moving the question
by the difference between the mean of the same questions asked in each language (the same everyday
questions below, on no run's topic) takes that side away. Pure: the vectors are handed in.
"""

from __future__ import annotations

import re

import numpy as np

from .embedders import Vectors, normalised

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
HAN_SHARE = 0.2  # of a text's letters, the Han characters that make it Chinese (a Latin name does not)

SAME_QUESTIONS = {  # one everyday question a line, in each language the simulators write
    "en": ("What time does the shop open tomorrow?", "Who is responsible for this decision?",
           "How much does a ticket cost?", "Where can I find more information?",
           "Did anyone see what happened last night?", "Why did the price go up again?", "Which team won the game?",
           "How long will the repairs take?", "Is the weather going to be better this weekend?",
           "What did the mayor say about the plan?", "Has the new rule changed anything for families?",
           "Who complained about the noise?", "When will the results be published?",
           "Which company runs the service?", "Are there any cheaper options?",
           "What do people think about the new policy?", "Did the doctors say it was safe?",
           "How many people came to the meeting?", "Where did the accident take place?",
           "Who paid for the new building?", "Is anyone against the proposal?",
           "What problem did the students report?", "Which road was closed this morning?",
           "How did the workers react to the news?"),
    "zh": ("明天商店几点开门？", "谁对这个决定负责？", "一张票多少钱？", "在哪里可以找到更多信息？", "有人看到昨晚发生了什么吗？",
           "为什么价格又涨了？", "哪个队赢了比赛？", "维修要多长时间？", "这个周末天气会好一点吗？", "市长对这个计划说了什么？",
           "新规定对家庭有什么改变吗？", "谁抱怨了噪音？", "结果什么时候公布？", "哪家公司负责这项服务？", "有没有更便宜的选择？",
           "大家怎么看这项新政策？", "医生说这样安全吗？", "有多少人来参加了会议？", "事故发生在哪里？", "新大楼是谁出钱建的？",
           "有人反对这个提议吗？", "学生们反映了什么问题？", "今天早上哪条路封了？", "工人们对这个消息有什么反应？"),
}


def language_of(text: str) -> str:
    """`zh` when Han characters are a fifth or more of the text's letters, else `en`."""
    han, latin = len(HAN.findall(text)), len(LATIN.findall(text))
    return "zh" if han and han / (han + latin) >= HAN_SHARE else "en"


def posts_language(texts: list[str]) -> str:
    """The language most of a run's wordings are in."""
    chinese = sum(language_of(t) == "zh" for t in texts)
    return "zh" if 2 * chinese > len(texts) else "en"


def moved(asked: Vectors, means: dict[str, Vectors], source: str, target: str) -> Vectors:
    """A question's vector asked in `source`, moved to where it would lie asked in `target` (`means`: the
    mean vector of SAME_QUESTIONS in each language, embedded as questions)."""
    if source == target:
        return asked
    out: Vectors = normalised((asked - (means[source] - means[target]))[None, :])[0]
    return out


def means_of(vectors: Vectors) -> dict[str, Vectors]:
    """The mean of each language's SAME_QUESTIONS from their vectors, embedded in SAME_QUESTIONS' order."""
    split = len(SAME_QUESTIONS["en"])
    return {"en": np.asarray(vectors[:split].mean(axis=0)), "zh": np.asarray(vectors[split:].mean(axis=0))}
