"""The statements' sentences, in English and in Chinese: one table, so both say the same facts.

Pure. The statements (findings/statements.py) decide which facts a section states and with which figures; this
module only words them, in the language of the simulation's requirement (`language.py`). The
Chinese shapes of the figures ("第5轮有120次行动", "Twitter平均每轮12.5次") are the ones the report
scorer (simulator/quality.py) reads, as it reads "round 5 with 120 actions" in English.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .language import Language, language_of

EN: dict[str, str] = {
    "note": "Written by simreportd's offline writer from the simulation data, without a language model.",
    "summary": "An analysis of {actions} simulated actions by {agents} agents over {rounds} rounds on {platforms}, "
               "answering: {requirement}",
    "no_platform": "no platform", "no_question": "what happened in this simulation?",
    "title_event": "{topic}: what happened when the round {round} event hit",
    "title_before": "{topic}: the first {rounds} rounds, before the round {round} event",
    "title_plain": "{topic}: how the simulated debate unfolded",
    "s_event": "Round {round}: the scheduled event and the spike around it",
    "s_rounds": "How the conversation moved, round by round",
    "s_camps_largest": "The camps: {stance} agents are the largest", "s_camps": "The camps and their arguments",
    "s_camps_tied": "The camps: {stances} agents are tied as the largest",
    "s_platforms": "Where Twitter and Reddit parted ways", "s_drivers": "Who drove the debate, and who changed sides",
    "s_answers": "Answers to the requirement's questions",
    "from_data": "From the data:",
    "model_reading": "_The model's reading, each sentence checked against the data:_",
    "model_added_none": "_The model's sentences only restated the data below; it added no finding of its own._",
    "d_timeline": "Volume per round and platform, the turning points against their baselines, and what set them off.",
    "d_camps": "Which stances formed, how big each camp is and what each camp argued most, in the agents' own words.",
    "d_platforms": "Platform divergence overall and after the trigger, and what each platform kept talking about.",
    "d_drivers": "The most active and most engaged-with agents, who reacted to whom, and the agents who changed sides.",
    "d_answers": "Each question of the requirement, answered from the evidence of the sections above.",
    "no_analytics_rounds": "The analytics tool returned nothing, so the round-by-round picture cannot be drawn.",
    "recorded": "The simulation recorded {total} actions in total: {twitter} on Twitter and {reddit} on Reddit, over "
                "{rounds} rounds after the seed posts.",
    "turning_first": "The first turning point was", "turning_next": "Another turning point was",
    "turning": "{lead} round {round} with {volume} actions, {ratio}x the mean of rounds {first}-{last} ({mean}).",
    "no_turning": "No round reached twice the mean of the three rounds before it.",
    "against_before": "Against all the rounds before it, round {round} with {total} actions was {ratio}x the mean of "
                      "{covered} ({mean}){more}.",
    "percent_more": ", {percent}% more than that mean",
    "event": "Round {round} is when the scenario's scheduled event landed:\n\n> \u201c{description}\u201d",
    "unreached": "The scenario's scheduled event, set for round {round}, had not happened by the last round recorded "
                 "({last}).",
    "said_in_round": "What agents said in round {round}:",
    "before_means": "Before round {round}, Twitter averaged {twitter} actions per round and Reddit averaged {reddit} "
                    "({covered}).",
    "after_means": "After round {round}, Twitter averaged {twitter} actions per round and Reddit averaged {reddit} "
                   "({covered}).",
    "recorded_one": "The simulation recorded {total} actions in total, all on {platform} (the run's only platform), "
                    "over {rounds} rounds after the seed posts.",
    "before_mean_one": "Before round {round}, {platform} averaged {mean} actions per round ({covered}).",
    "after_mean_one": "After round {round}, {platform} averaged {mean} actions per round ({covered}).",
    "only_platform": "{platform} was the run's only platform: after round {round} it averaged {mean} actions per round "
                     "({covered}).",
    "split": "By their profiles the {agents} agents split into {sizes}.",
    "by_wording": "Arguments were grouped by their exact wording and searches matched keywords only ({why}).",
    "camp_argument": "The {stance} camp's most repeated argument came up in {statements} by {authors}; {name} "
                     "({agent}) put it first:",
    "camp_next": "Next in the {stance} camp ({statements}):", "no_arguments": "The analytics found no argument "
                                                                              "repeated within a camp.",
    "forge_agents": "The agents behind the statements the question search found include {agents}.",
    "forge_agent": "{who}, {stance}: {actions} actions)",
    "across": " {n} mutual follows crossed camps.", "not_across": " No mutual follow crossed camps.",
    "no_coalition": "No group of {size} or more agents followed each other within a camp ({mutual} mutual follows in "
                    "all).{across}",
    "coalition": "{size} {camp} agents ({members}), together from round {round}", "group_sep": "; ",
    "coalitions": "{count} coalition{s} of agents who follow each other and speak for the same camp formed: {groups}."
                  "{across}",
    "asked": "Asked directly ({note}), these agents answered:",
    "answered": "{who}, {stance}, {mode}):", "no_stance": "no stated stance",
    "no_analytics_platforms": "The analytics tool returned nothing, so the platforms cannot be compared.",
    "whole_run": "Over the whole run there were {twitter} actions on Twitter and {reddit} on Reddit, an overall "
                 "divergence of {divergence} (|Twitter - Reddit| / total).",
    "furthest": "They were furthest apart in {rounds}: {twitter} actions on Twitter against {reddit} on Reddit "
                "(divergence {value}).",
    "mix": "On {platform} the most common actions were {actions}.", "mix_item": "{action} ({count})",
    "still_said": "Still being said on {platform} after round {round}:",
    "divergence": "After round {round}, {loud} kept the debate going: {loud} averaged {loud_mean} actions per round "
                  "against {quiet_mean} on {quiet} ({covered}){ratio}.",
    "ratio": ", {ratio}x as many",
    "most_active": "The most active agents were {agents}.",
    "spread": "The debate spread fastest in round {round}, with {total} actions.",
    "probe_led": "{lead} led the run with {lead_n} actions against {other_n} on {other}{ratio}.",
    "probe_event": "The scheduled event landed in round {round}.",
    "chat_lead": "Answered offline from the simulation's tools, without a language model ({tools}).",
    "chat_no_tools": "none returned anything", "chat_latest": "Their latest statement:",
    "chat_matches": "What agents said that matches the question:",
    "chat_no_match": "The search found no post that matches the question's words.",
    "chat_busiest": "No round reached twice its rolling mean; the busiest was round {round} with {total} actions.",
    "chat_turning": "The sharpest turning point was round {round}: {volume} actions, {ratio}x the rolling mean of the "
                    "rounds before it ({mean}).",
    "chat_totals": "The simulation recorded {total} actions: {twitter} on Twitter and {reddit} on Reddit.",
    "active_agent": "{who}, {stance}: {actions} actions, {posts} posts)",
    "reacted_to": "Others reacted most to {agents}.",
    "engaged_agent": "{who}, {stance}: {reactions} reactions, of which {shares} reposts or quotes, {comments} comments "
                     "and {likes} likes)",
    "chains": "The strongest interaction chains{about}: {chains}.", "chains_about": " around \u201c{query}\u201d",
    "own_words": "In {name}'s own words:", "no_activity": "The tools returned no activity data for this simulation.",
    "chain": "{source} {verb} {whom} {count} times", "own": "their own {noun}", "themselves": "themselves",
    "of_other": "the {noun} of {other}",
    "profile": "{who}) took {actions} actions; posts, reactions or follows: {twitter} on Twitter "
               "and {reddit} on Reddit, in {active} rounds from round {first} to round {last}, {statements} of them "
               "posts, quotes or comments.",
    "engaged_most": " They engaged most with {others}.", "engaged_other": "{name} ({ref}, {kind} x{count})",
    "no_shift": "No agent's statements moved from one camp to another.",
    "changed": "{agents} changed sides",
    "changed_at_least": "At least {agents} changed sides (the analytics were shortened to fit: these are the first)",
    "changed_first": "{agents} changed sides (the analytics were shortened to fit: these are the first)",
    "shift_list": "Each spoke for another camp than their profile's from a round on: {shifts}.",
    "shift_item": "{name} ({agent}, {stated} by profile, for the {now} camp from round {round} in all {n} statements)",
    "shift_words": "{name} ({agent}) after the change:",
    "moved": "{counted}: their statements moved to another camp than their profile's.",
    "shift": "{name} ({agent}) is {stated} by profile, but from round {round} on, all {n} of their statements spoke for "
             "the {now} camp:",
    "no_platform_answer": "The platforms cannot be compared from the data.",
    "no_requirement_question": "The requirement asks no question this writer can answer from the data.",
    "largest": "The {stance} camp is the largest: the agents split into {sizes}.",
    "tied": "The {stances} camps are tied as the largest: the agents split into {sizes}.",
    "moved_after": "The reaction moved after round {round}: {shifts}.",
    "moved_agent": "{name} ({agent}, {stated} by profile) spoke for the {now} camp from round {round}",
    "dominant": "The {stance} camp's dominant argument ({statements}):",
    "quote_lead": "{who}, {stance}, round {round}) wrote on {platform}:",
}
ZH: dict[str, str] = {
    "note": "本报告由 simreportd 的离线写作器依据模拟数据写成，未使用语言模型。",
    "summary": "分析{agents}名参与者在{platforms}上{rounds}轮中的{actions}次模拟行动，回答：{requirement}",
    "no_platform": "无平台", "no_question": "这次模拟中发生了什么？",
    "title_event": "{topic}：第{round}轮事件发生后的舆论走向",
    "title_before": "{topic}：前{rounds}轮，第{round}轮事件之前",
    "title_plain": "{topic}：模拟讨论如何展开",
    "s_event": "第{round}轮：预定事件与随之而来的高峰", "s_rounds": "讨论如何逐轮变化",
    "s_camps_largest": "各方阵营：{stance}人数最多", "s_camps": "各方阵营及其观点",
    "s_camps_tied": "各方阵营：{stances}人数并列最多",
    "s_platforms": "Twitter与Reddit的分歧", "s_drivers": "谁推动了讨论，谁改变了立场",
    "s_answers": "对需求中问题的回答",
    "from_data": "数据中的事实：",
    "model_reading": "_模型的解读（每句均已对照数据核查）：_",
    "model_added_none": "_模型的句子只是复述了下面的数据，没有提出自己的发现。_",
    "d_timeline": "逐轮、分平台的行动量，相对基线的转折点，以及引发它们的原因。",
    "d_camps": "形成了哪些立场，各阵营有多大，各阵营最常说什么，用参与者自己的话。",
    "d_platforms": "两个平台总体上和触发事件之后的分歧，以及各平台持续讨论的内容。",
    "d_drivers": "最活跃、最受关注的参与者，谁回应了谁，以及改变立场的参与者。",
    "d_answers": "依据以上各节的证据，逐一回答需求中的问题。",
    "no_analytics_rounds": "分析工具没有返回数据，无法描绘逐轮变化。",
    "recorded": "本次模拟共记录{total}次行动：Twitter上{twitter}次，Reddit上{reddit}次，种子帖之后共{rounds}轮。",
    "turning_first": "第一个转折点是", "turning_next": "另一个转折点是",
    "turning": "{lead}第{round}轮有{volume}次行动，是第{first}-{last}轮均值（{mean}）的{ratio}倍。",
    "no_turning": "没有哪一轮达到其前三轮均值的两倍。",
    "against_before": "与此前各轮相比，第{round}轮有{total}次行动，是{covered}均值（{mean}）的{ratio}倍{more}。",
    "percent_more": "，比该均值多{percent}%",
    "event": "第{round}轮是情景中预定事件发生的时候：\n\n> \u201c{description}\u201d",
    "unreached": "情景中定于第{round}轮的预定事件，到记录的最后一轮（第{last}轮）时尚未发生。",
    "said_in_round": "第{round}轮中参与者说了什么：",
    "before_means": "第{round}轮之前，Twitter平均每轮{twitter}次行动，Reddit平均每轮{reddit}次（{covered}）。",
    "after_means": "第{round}轮之后，Twitter平均每轮{twitter}次行动，Reddit平均每轮{reddit}次（{covered}）。",
    "recorded_one": "本次模拟共记录{total}次行动，全部在{platform}上（本次模拟唯一的平台），种子帖之后共{rounds}轮。",
    "before_mean_one": "第{round}轮之前，{platform}平均每轮{mean}次行动（{covered}）。",
    "after_mean_one": "第{round}轮之后，{platform}平均每轮{mean}次行动（{covered}）。",
    "only_platform": "本次模拟只有{platform}一个平台：第{round}轮之后（{covered}），平均每轮{mean}次行动。",
    "split": "按档案，{agents}名参与者分为{sizes}。",
    "by_wording": "观点按原文归并，检索仅按关键词进行（{why}）。",
    "camp_argument": "{stance}最常重复的观点出现在{statements}中，来自{authors}；{name} ({agent}) 最先提出：",
    "camp_next": "{stance}其次的观点（{statements}）：", "no_arguments": "分析没有发现在同一阵营内重复出现的观点。",
    "forge_agents": "问题检索找到的发言者包括{agents}。",
    "forge_agent": "{who}，{stance}：{actions}次行动)",
    "across": "另有{n}对互相关注跨越了阵营。", "not_across": "没有跨越阵营的互相关注。",
    "no_coalition": "没有{size}人或以上在同一阵营内互相关注的群体（互相关注共{mutual}对）。{across}",
    "coalition": "{camp}{size}人（{members}），自第{round}轮起结成", "group_sep": "；",
    "coalitions": "形成了{count}个互相关注、为同一阵营发声的群体：{groups}。{across}",
    "asked": "直接采访了以下参与者（模拟环境在运行时实时回答，否则依据档案和帖子以人设回答）：",
    "answered": "{who}，{stance}，{mode})：", "no_stance": "未表明立场",
    "no_analytics_platforms": "分析工具没有返回数据，无法比较两个平台。",
    "whole_run": "整个模拟中，Twitter上{twitter}次行动，Reddit上{reddit}次，总体分歧度为{divergence}"
                 "（|Twitter - Reddit| / 总数）。",
    "furthest": "两者差距最大的是{rounds}：Twitter上{twitter}次行动，Reddit上{reddit}次（分歧度{value}）。",
    "mix": "{platform}上最常见的行动是{actions}。", "mix_item": "{action}（{count}）",
    "still_said": "第{round}轮之后{platform}上仍在讨论：",
    "divergence": "第{round}轮之后，{loud}上的讨论持续升温：随后（{covered}）{loud}平均每轮{loud_mean}次行动，"
                  "{quiet}上则为每轮{quiet_mean}次{ratio}。",
    "ratio": "，是后者的{ratio}倍",
    "most_active": "最活跃的参与者是{agents}。",
    "spread": "讨论在第{round}轮传播最快，共{total}次行动。",
    "probe_led": "{lead}上的行动最多：共{lead_n}次，{other}上为{other_n}次{ratio}。",
    "probe_event": "预定事件发生在第{round}轮。",
    "chat_lead": "由 simreportd 依据模拟工具的结果离线回答，未使用语言模型（{tools}）。",
    "chat_no_tools": "没有工具返回结果", "chat_latest": "其最新发言：",
    "chat_matches": "与问题相符的参与者发言：",
    "chat_no_match": "检索没有找到与问题用词相符的帖子。",
    "chat_busiest": "没有一轮达到其滚动均值的两倍；最繁忙的是第{round}轮，共{total}次行动。",
    "chat_turning": "最明显的转折点是第{round}轮：{volume}次行动，是此前各轮滚动均值（{mean}）的{ratio}倍。",
    "chat_totals": "本次模拟共记录{total}次行动：Twitter上{twitter}次，Reddit上{reddit}次。",
    "active_agent": "{who}，{stance}：{actions}次行动，{posts}条帖子)",
    "reacted_to": "其他人回应最多的是{agents}。",
    "engaged_agent": "{who}，{stance}：{reactions}次回应，其中转发或引用{shares}次、评论{comments}次、点赞{likes}次)",
    "chains": "最强的互动链{about}：{chains}。", "chains_about": "（围绕\u201c{query}\u201d）",
    "own_words": "{name}的原话：", "no_activity": "工具没有返回这次模拟的活动数据。",
    "chain": "{source}{verb}{whom}{count}次", "own": "自己的{noun}", "themselves": "自己",
    "of_other": "{other}的{noun}",
    "profile": "{who}) 共有{actions}次行动，其中发帖、回应或关注在Twitter上{twitter}次、Reddit上{reddit}次，"
               "分布在第{first}轮到第{last}轮中的{active}轮，其中{statements}次是发帖、引用或评论。",
    "engaged_most": "互动最多的对象是{others}。", "engaged_other": "{name} ({ref}，{kind} ×{count})",
    "no_shift": "没有参与者的发言从一个阵营转向另一个阵营。",
    "changed": "{agents}改变了立场",
    "changed_at_least": "至少{agents}改变了立场（分析结果为适应长度而截短，以下是前几位）",
    "changed_first": "{agents}改变了立场（分析结果为适应长度而截短，以下是前几位）",
    "shift_list": "他们自某一轮起都在为档案立场之外的阵营发言：{shifts}。",
    "shift_item": "{name} ({agent}，档案立场为{stated}，自第{round}轮起全部{n}条发言都在为{now}说话)",
    "shift_words": "{name} ({agent}) 改变立场后的发言：",
    "moved": "{counted}：他们的发言转向了与档案不同的阵营。",
    "shift": "{name} ({agent}) 的档案立场是{stated}，但从第{round}轮起，其全部{n}条发言都在为{now}说话：",
    "no_platform_answer": "数据不足以比较两个平台。",
    "no_requirement_question": "需求中没有本写作器能依据数据回答的问题。",
    "largest": "{stance}人数最多：参与者分为{sizes}。",
    "tied": "{stances}人数并列最多：参与者分为{sizes}。",
    "moved_after": "第{round}轮之后反应发生了变化：{shifts}。",
    "moved_agent": "{name} ({agent}，档案立场为{stated}) 自第{round}轮起为{now}发声",
    "dominant": "{stance}的主导观点（{statements}）：",
    "quote_lead": "{who}，{stance}，第{round}轮) 在{platform}上写道：",
}
STANCES_ZH = {"supportive": "支持方", "opposing": "反对方", "neutral": "中立方", "observer": "旁观方"}
MODES_ZH = {"live": "实时", "persona": "人设"}
CHAIN_VERBS = {"like": ("liked", "posts", "点赞了", "帖子"), "dislike": ("disliked", "posts", "踩了", "帖子"),
               "repost": ("reposted", "posts", "转发了", "帖子"), "quote": ("quoted", "posts", "引用了", "帖子"),
               "comment": ("commented on", "posts", "评论了", "帖子"),
               "like_comment": ("liked", "comments", "点赞了", "评论"),
               "dislike_comment": ("disliked", "comments", "踩了", "评论"),
               "follow": ("followed", "", "关注了", ""), "mute": ("muted", "", "屏蔽了", "")}


@dataclass(frozen=True)
class Phrases:
    """The sentences of one language, and the small words around figures (counts, lists, rounds, stances)."""

    language: Language

    def __call__(self, key: str, **values: Any) -> str:
        return (ZH if self.language == "zh" else EN)[key].format(**values)

    def listing(self, items: list[str]) -> str:
        """`a, b and c` (`a、b和c`)."""
        if len(items) < 2:
            return items[0] if items else ""
        return ("、".join(items[:-1]) + "和" if self.language == "zh" else ", ".join(items[:-1]) + " and ") + items[-1]

    def count(self, n: int, noun: str) -> str:
        """`1 statement`, `5 statements` (`5条发言`): a count with its noun, `statement` or `agent`."""
        if self.language == "zh":
            return f"{n}{'条发言' if noun == 'statement' else '名参与者'}"
        return f"{n} {noun}{'' if n == 1 else 's'}"

    def rounds(self, first: int, last: int) -> str:
        """`round 3` or `rounds 3-5` (`第3轮`, `第3-5轮`)."""
        if self.language == "zh":
            return f"第{first}轮" if first == last else f"第{first}-{last}轮"
        return f"round {first}" if first == last else f"rounds {first}-{last}"

    def stance(self, stance: str) -> str:
        """A stance as the sentences name a camp: `supportive` (`支持方`)."""
        return STANCES_ZH.get(stance, stance) if self.language == "zh" else stance

    def mode(self, mode: str) -> str:
        """How an interview was answered: `live` or `persona` (`实时`, `人设`)."""
        return MODES_ZH.get(mode, mode) if self.language == "zh" else mode

    def camp_size(self, size: int, stance: str) -> str:
        """`18 supportive` (`支持方18人`); an English camp of several observers is `observers`."""
        if self.language == "zh":
            return f"{self.stance(stance)}{size}人"
        return f"{size} {stance}{'s' if stance == 'observer' and size > 1 else ''}"

    def chain_verb(self, kind: str) -> tuple[str, str]:
        """(verb, what it acts on) for an interaction chain's kind."""
        en_verb, en_noun, zh_verb, zh_noun = CHAIN_VERBS.get(kind, (kind, "", kind, ""))
        return (zh_verb, zh_noun) if self.language == "zh" else (en_verb, en_noun)

    def question_mark(self) -> str:
        return "？" if self.language == "zh" else "?"


def phrases_for(requirement: str) -> Phrases:
    """The sentences for a report on a simulation with this requirement: in its language."""
    return Phrases(language_of(requirement))


ENGLISH = Phrases("en")
