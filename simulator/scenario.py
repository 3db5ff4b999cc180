"""The story `simreportd simulate` tells: a topic, camps with stances, a spike and a divergence.

Pure and deterministic: everything is drawn from a `random.Random(seed)`, so one seed is
always the same simulation, byte for byte.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from .llm_voice import LlmVoice
from .story import STANCES, Agent, Coalition, Said, Scenario, Story
from .voice import CatalogueVoice, Voice

STYLES = ("catalogue", "llm")


SCENARIOS = [
    Scenario(
        topic="the city council's proposal for a downtown congestion charge",
        short="congestion charge",
        requirement="How will residents react to the proposed downtown congestion charge, which arguments "
        "will dominate, and how does the debate differ between Twitter and Reddit?",
        trigger="A leaked council memo suggests part of the charge revenue would fund a stadium, not buses.",
        trigger_words=["memo", "stadium"],
        hot_topics=["congestion charge", "bus lanes", "air quality", "small business", "stadium memo"],
        lines={
            "supportive": [
                "The congestion charge is overdue: the trial cut bus journey times by {n} minutes on the ring road.",
                "Cleaner air downtown is worth {p} a day. My kid's asthma inhaler use dropped during the trial.",
                "Every city that priced congestion saw traffic fall by about {pct}%. Why would we be different?",
                "If the revenue goes to bus lanes, the congestion charge pays for itself within {n} months.",
            ],
            "opposing": [
                "A {p} daily congestion charge is a tax on people who cannot work from home.",
                "Small shops on Market Street will lose {pct}% of their customers to the out-of-town malls.",
                "Nobody asked night-shift workers. The buses stop at 11pm and the congestion charge doesn't.",
                "The congestion charge punishes the suburbs while the council drives chauffeured cars.",
            ],
            "neutral": [
                "Has anyone seen the actual numbers for the congestion charge? The consultation PDF is {n} pages.",
                "I'd support a congestion charge with exemptions for carers and night workers. Is that on the table?",
                "Trying to understand the congestion charge zones. Is the harbour inside the boundary or not?",
            ],
            "observer": [
                "Live from the town hall: {n} people queued to speak about the congestion charge tonight.",
                "Poll of {n} residents: {pct}% support the congestion charge if revenue is ring-fenced for transit.",
            ],
        },
        spike_lines={
            "supportive": [
                "If the stadium memo is true I'm out. I backed the congestion charge for buses, not for a stadium.",
                "Ring-fence the revenue in law and the congestion charge still makes sense. Don't let the memo kill it.",
            ],
            "opposing": [
                "There it is: the congestion charge was never about air quality. It's a stadium fund.",
                "The stadium memo proves it. Scrap the congestion charge and audit the council.",
            ],
            "neutral": [
                "Can the council confirm or deny the stadium memo before the congestion charge vote?",
                "The stadium memo changes my mind on the congestion charge unless there's a legal ring-fence.",
            ],
            "observer": [
                "Council spokesperson: the leaked memo is 'an early draft' and the charge revenue is 'not allocated'.",
            ],
        },
        comments={
            "supportive": ["Agreed, the bus data is hard to argue with.", "This is the point people miss."],
            "opposing": ["Easy to say if you live downtown.", "And who checks where the money goes?"],
            "neutral": ["Source for that number?", "Both sides have a point here."],
            "observer": ["Adding this to the thread tracker.", "The council meets again on Thursday."],
        },
        questions=[
            {"question": "How will residents react to the proposed downtown congestion charge?",
             "keywords": ["react"], "facts": ["camp", "shift"]},
            {"question": "Which arguments will dominate?", "keywords": ["arguments", "dominate"], "facts": ["argument"]},
            {"question": "How does the debate differ between Twitter and Reddit?",
             "keywords": ["Twitter", "Reddit", "differ"], "facts": ["divergence"]},
        ],
    ),
    Scenario(
        topic="a university's plan to replace exams with AI-proctored coursework",
        short="AI proctoring",
        requirement="How will students and staff react to AI-proctored coursework replacing exams, what "
        "concerns spread fastest, and where do Twitter and Reddit part ways?",
        trigger="A student shows the proctoring software flagged her for 'suspicious eye movement' during a seizure.",
        trigger_words=["seizure", "eye movement"],
        hot_topics=["AI proctoring", "privacy", "exam stress", "accessibility", "false flags"],
        lines={
            "supportive": [
                "AI proctoring lets us drop the {n}-hour exam marathon. Coursework measures real skills.",
                "Exam stress sent {pct}% of my cohort to counselling. Anything that replaces finals is progress.",
                "The pilot had {n} modules and fewer academic-misconduct cases than exams ever did.",
            ],
            "opposing": [
                "AI proctoring means a camera in my bedroom for {n} hours a week. That is surveillance.",
                "Nobody has audited the AI proctoring model. {pct}% false flags in the pilot is not a rounding error.",
                "Students without a quiet room at home will be flagged by AI proctoring more often. That's the design.",
            ],
            "neutral": [
                "Genuine question: who stores the AI proctoring recordings, and for how long?",
                "I like coursework, I'm unsure about AI proctoring. Can we have one without the other?",
            ],
            "observer": [
                "Student union survey, {n} replies: {pct}% oppose AI proctoring in its current form.",
            ],
        },
        spike_lines={
            "supportive": ["The seizure case is awful. Fix the flagging rules before launch, but keep coursework."],
            "opposing": ["A seizure flagged as cheating. AI proctoring must be stopped now.",
                         "This is what we warned about: AI proctoring punishes disabled students."],
            "neutral": ["After the seizure story I need to see the appeal process for AI proctoring flags."],
            "observer": ["The university says the flag in the seizure case was 'reviewed by a human and cleared'."],
        },
        comments={
            "supportive": ["Coursework is the real win here.", "Exams were never fair either."],
            "opposing": ["Privacy matters more than convenience.", "Exactly, and nobody can appeal the model."],
            "neutral": ["Is there a written policy yet?", "Interesting point, need more data."],
            "observer": ["Tracking the union's response.", "Senate votes next month."],
        },
        questions=[
            {"question": "How will students and staff react to AI-proctored coursework replacing exams?",
             "keywords": ["react"], "facts": ["camp", "shift"]},
            {"question": "What concerns spread fastest?", "keywords": ["concerns", "fastest"],
             "facts": ["argument", "spike"]},
            {"question": "Where do Twitter and Reddit part ways?", "keywords": ["Twitter", "Reddit", "part ways"],
             "facts": ["divergence"]},
        ],
    ),
    Scenario(
        topic="某市拟推行的垃圾按袋计费新规",
        short="垃圾按袋计费",
        requirement="市民会如何看待垃圾按袋计费新规？哪些观点会占上风？Twitter和Reddit上的讨论有何不同？",
        trigger="媒体曝光：居民分好类的垃圾被清运车混装运走。",
        trigger_words=["混装", "mixed"],
        hot_topics=["按袋计费", "垃圾分类", "清运", "老年人", "罚款"],
        lines={
            "supportive": [
                "按袋计费很合理，试点小区的垃圾量减少了{pct}%。",
                "扔得多就多付钱，这才公平。我家一周只用{n}个袋子。",
                "垃圾分类做好了，按袋计费根本花不了几个钱。",
            ],
            "opposing": [
                "按袋计费就是变相涨价，一个月多花{n}块钱。",
                "老年人根本分不清{n}种垃圾，按袋计费只会带来罚款。",
                "收费之前先把清运做好，现在的垃圾站{n}天才清一次。",
            ],
            "neutral": [
                "按袋计费的专用袋在哪里买？一袋多少钱？",
                "支持垃圾分类，但按袋计费的细则还没公布，先看看再说。",
            ],
            "observer": [
                "街道通知：{n}个小区下月起试行按袋计费。",
                "本地调查{n}人回复：{pct}%的人担心罚款。",
            ],
        },
        spike_lines={
            "supportive": ["如果分好的垃圾又被混装，按袋计费就失去了意义，先整改清运。"],
            "opposing": ["混装运走的视频说明一切：按袋计费只是收钱，分类都是白做。",
                         "清运车混装，居民还要按袋付费？立即暂停新规！"],
            "neutral": ["看了混装的视频，我想知道按袋计费的钱到底用在哪里。"],
            "observer": ["环卫部门回应：混装视频中的车辆属于其他垃圾专线，正在核查。"],
        },
        comments={
            "supportive": ["同意，数据说明问题。", "分类做好就不贵。"],
            "opposing": ["说得轻巧，谁来监督？", "又是收费，受够了。"],
            "neutral": ["有官方文件吗？", "两边都有道理。"],
            "observer": ["已加入话题汇总。", "听证会下周举行。"],
        },
        names=(["王", "李", "张", "刘", "陈", "杨", "赵", "黄", "周", "吴", "徐", "孙", "马", "朱", "胡", "郭"],
               ["伟", "芳", "娜", "敏", "静", "磊", "洋", "艳", "勇", "军", "杰", "娟", "涛", "明", "超", "丽",
                "强", "霞", "平", "刚", "桂英", "秀兰", "建华", "晓东"], ""),
        entity_types=["居民", "店主", "环卫工人", "记者", "街道干部", "学生", "物业经理", "志愿者", "退休教师"],
        questions=[
            {"question": "市民会如何看待垃圾按袋计费新规？", "keywords": ["如何看待"], "facts": ["camp", "shift"]},
            {"question": "哪些观点会占上风？", "keywords": ["观点", "占上风"], "facts": ["argument"]},
            {"question": "Twitter和Reddit上的讨论有何不同？", "keywords": ["Twitter", "Reddit", "不同"],
             "facts": ["divergence"]},
        ],
    ),
]


CAMP_MIXES = ([4, 4, 2, 1], [6, 3, 2, 1], [3, 6, 2, 1], [3, 4, 4, 1])


def make_agents(rng: random.Random, count: int, scenario: Scenario) -> list[Agent]:
    """Agents with unique names; the first four cover every stance, the rest follow a seed-drawn camp mix."""
    firsts, lasts, sep = scenario.names
    mix = rng.choice(CAMP_MIXES)
    agents: list[Agent] = []
    taken: set[str] = set()
    for i in range(count):
        first, last = rng.choice(firsts), rng.choice(lasts)
        while f"{first}{sep}{last}" in taken and len(taken) < len(firsts) * len(lasts):
            first, last = rng.choice(firsts), rng.choice(lasts)
        taken.add(f"{first}{sep}{last}")
        stance = STANCES[i % len(STANCES)] if i < len(STANCES) else rng.choices(STANCES, mix)[0]
        entity = rng.choice(scenario.entity_types)
        bio = f"{entity} in the city. {stance.capitalize()} on {scenario.short}. Posts about {rng.choice(scenario.hot_topics)}."
        username = f"{first.lower()}_{last.lower()}{i}" if first.isascii() else f"user{i}"
        agents.append(Agent(i, f"{first}{sep}{last}", username, entity, stance,
                            round(rng.uniform(0.3, 1.0), 2), round(rng.uniform(0.5, 3.0), 2), bio,
                            rng.randint(19, 71), rng.choice(["INTJ", "ENFP", "ISTJ", "ENTP", "INFJ", "ESFJ"]),
                            rng.choice(["UK", "Germany", "Japan", "Brazil", "Kenya", "India"])))
    return agents


def make_story(seed: int, agents: int, rounds: int, style: str = "catalogue") -> Story:
    """Decide every line of a simulation from `seed`: trigger round, louder platform, camps, side-changers.

    `style` is how agents write: "catalogue" (their camp's fixed lines) or "llm" (every statement anew)."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    rng = random.Random(seed)
    scenario = SCENARIOS[seed % len(SCENARIOS)]
    simulation_id = f"sim_{rng.getrandbits(48):012x}"
    lo = max(2, round(rounds * 0.3))
    story = Story(simulation_id, scenario, make_agents(rng, agents, scenario), rounds,
                  spike_round=rng.randint(lo, max(lo, round(rounds * 0.6))), start=datetime(2026, 3, 2, 8, 0, 0),
                  loud_platform=rng.choice(["twitter", "reddit"]), style=style)
    sources, target = scenario.shift
    movable = [a.agent_id for a in story.agents[len(STANCES):] if a.stance in sources]
    story.shifts = {i: target for i in sorted(rng.sample(movable, min(len(movable), 1 + agents // 20)))}
    llm = llm_voice(story, seed) if style == "llm" else None
    for platform in ("twitter", "reddit"):
        story.lines[platform] = PlatformWriter(story, platform, random.Random(f"{seed}:{platform}"), llm).rounds()
    story.coalitions = make_coalitions(rng, story)
    for coalition in story.coalitions:
        add_mutual_follows(story, coalition)
    return story


def llm_voice(story: Story, seed: int) -> Voice:
    """The llm style's one voice for both platforms; its side-changers change at a round of their own (from the
    trigger's to three rounds later)."""
    late = random.Random(f"{seed}:shifts")
    last = max(story.spike_round, min(story.rounds - 1, story.spike_round + 3))
    story.shift_rounds = {i: late.randint(story.spike_round, last) for i in story.shifts}
    voice = LlmVoice(story, random.Random(f"{seed}:voice"))
    story.drifts, story.summaries = voice.drifts(), voice.summaries()
    return voice


def make_coalitions(rng: random.Random, story: Story) -> list[Coalition]:
    """Per large camp, three agents (none changing sides) who follow each other after the trigger, pair by pair.

    The second camp's follows carry their target as the native environment writes it (`agent_id`)."""
    out = []
    for i, stance in enumerate(("supportive", "opposing")):
        pool = [a.agent_id for a in story.agents if a.stance == stance and a.agent_id not in story.shifts]
        first = story.spike_round + 2 + i
        if len(pool) >= 3 and first + 1 <= story.rounds:
            out.append(Coalition(stance, tuple(rng.sample(pool, 3)), (first, first + 1), native=i == 1))
    return out


def add_mutual_follows(story: Story, coalition: Coalition) -> None:
    """The coalition's follows, at the end of their rounds on the louder platform."""
    members = [story.agents[i] for i in coalition.members]
    for (a, b), round_no in zip(zip(members, members[1:]), coalition.rounds):
        lines = story.lines[story.loud_platform][round_no]
        ts = story.start + timedelta(minutes=60 * round_no, seconds=len(lines) * 7)
        for src, dst in ((a, b), (b, a)):
            args = {"agent_id": dst.agent_id} if coalition.native else {"target_user_name": dst.name}
            lines.append(PlatformWriter.line(src, round_no, ts, "FOLLOW", args))
class PlatformWriter:
    """Writes one platform's action lines, round by round, with the enriched args of the real runner."""

    def __init__(self, story: Story, platform: str, rng: random.Random, voice: Voice | None = None) -> None:
        self.story, self.platform, self.rng = story, platform, rng
        self.voice: Voice = voice or CatalogueVoice(story, rng)
        self.posts: list[dict[str, Any]] = []
        self.comments: list[dict[str, Any]] = []
        self.next_post, self.next_comment = 1, 1

    def rounds(self) -> list[list[dict[str, Any]]]:
        return [self.actions_of(r) for r in range(self.story.rounds + 1)]

    def volume(self, round_no: int) -> float:
        """Relative activity: a spike at the trigger, then the loud platform keeps arguing while the other moves on."""
        s = self.story.spike_round
        if round_no == s:
            return 3.2
        if round_no > s:
            fade = 1.6 if self.platform == self.story.loud_platform else 0.55
            return fade if round_no > s + 1 else 1.8
        return 1.0

    def actions_of(self, round_no: int) -> list[dict[str, Any]]:
        ts = self.story.start + timedelta(minutes=60 * round_no)
        if round_no == 0:
            seeds = [a for a in self.story.agents if a.stance != "observer"][:4]
            return [self.create_post(a, round_no, ts, self.voice.post(a, round_no, False)) for a in seeds]
        actions: list[dict[str, Any]] = []
        spike = round_no >= self.story.spike_round
        for agent in self.story.agents:
            at = ts + timedelta(seconds=len(actions) * 7)
            if agent.agent_id in self.story.shifts and round_no - self.story.shift_round(agent.agent_id) in (0, 1):
                actions.append(self.create_post(agent, round_no, at, self.voice.post(agent, round_no, spike)))
            elif self.rng.random() < agent.activity * 0.35 * self.volume(round_no):
                actions.append(self.act(agent, round_no, at, spike))
        return actions

    def act(self, agent: Agent, round_no: int, ts: datetime, spike: bool) -> dict[str, Any]:
        weights = {"twitter": [30, 26, 12, 10, 6, 4, 3, 3, 3, 3], "reddit": [22, 18, 4, 3, 4, 2, 30, 12, 3, 2]}
        kinds = ["CREATE_POST", "LIKE_POST", "REPOST", "QUOTE_POST", "FOLLOW", "DISLIKE_POST",
                 "CREATE_COMMENT", "LIKE_COMMENT", "SEARCH_POSTS", "DO_NOTHING"]
        kind = self.rng.choices(kinds, weights[self.platform])[0]
        if kind != "CREATE_POST" and not self.posts:
            kind = "CREATE_POST"
        if kind == "CREATE_POST":
            return self.create_post(agent, round_no, ts, self.voice.post(agent, round_no, spike))
        target = self.choose_post(agent, kind, round_no)
        author = self.story.agents[target["agent_id"]]
        if kind in ("LIKE_POST", "DISLIKE_POST"):
            args = {"post_id": target["post_id"], "post_content": target["content"], "post_author_name": author.name}
        elif kind == "REPOST":
            args = {"post_id": target["post_id"], "new_post_id": self.new_post_id(),
                    "original_content": target["content"], "original_author_name": author.name}
        elif kind == "QUOTE_POST":
            said = self.voice.quote(agent, round_no, spike, target)
            args = {"quoted_id": target["post_id"], "new_post_id": self.new_post_id(), "quote_content": said.text,
                    "original_content": target["content"], "original_author_name": author.name}
            self.posts.append({"post_id": args["new_post_id"], "content": said.text, "agent_id": agent.agent_id,
                               "stance": said.stance})
            self.story.note(f"post:{self.platform}:{args['new_post_id']}", said, agent, round_no)
        elif kind == "FOLLOW":
            args = {"target_user_name": author.name}
        elif kind == "CREATE_COMMENT":
            said = self.voice.comment(agent, round_no, target)
            content = said.text
            comment = {"comment_id": self.next_comment, "post_id": target["post_id"], "content": content,
                       "agent_id": agent.agent_id}
            self.story.note(f"comment:{self.platform}:{self.next_comment}", said, agent, round_no)
            self.next_comment += 1
            self.comments.append(comment)
            args = {"content": content, "post_id": target["post_id"], "comment_id": comment["comment_id"]}
        elif kind == "LIKE_COMMENT" and self.comments:
            comment = self.rng.choice(self.comments)
            args = {"comment_id": comment["comment_id"], "comment_content": comment["content"],
                    "comment_author_name": self.story.agents[comment["agent_id"]].name}
        elif kind == "SEARCH_POSTS":
            args = {"query": self.rng.choice(self.story.scenario.hot_topics)}
        else:
            kind, args = "DO_NOTHING", {}
        return self.line(agent, round_no, ts, kind, args)

    def choose_post(self, agent: Agent, kind: str, round_no: int) -> dict[str, Any]:
        """Agents mostly engage with the recent posts of influential authors; camps favour their own."""
        recent = self.posts[-40:]
        mine = self.story.stance_at(agent, round_no)
        def weight(p: dict[str, Any]) -> float:
            author = self.story.agents[p["agent_id"]]
            same = self.story.stance_at(author, round_no) == mine
            return float(author.influence * (2.5 if same == (kind != "DISLIKE_POST") else 0.6))
        return self.rng.choices(recent, [weight(p) for p in recent])[0]

    def new_post_id(self) -> int:
        self.next_post += 1
        return self.next_post - 1

    def create_post(self, agent: Agent, round_no: int, ts: datetime, said: Said) -> dict[str, Any]:
        post = {"post_id": self.new_post_id(), "content": said.text, "agent_id": agent.agent_id, "stance": said.stance}
        self.posts.append(post)
        self.story.note(f"post:{self.platform}:{post['post_id']}", said, agent, round_no)
        return self.line(agent, round_no, ts, "CREATE_POST", {"content": said.text, "post_id": post["post_id"]})

    @staticmethod
    def line(agent: Agent, round_no: int, ts: datetime, kind: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"round": round_no, "timestamp": ts.isoformat(), "agent_id": agent.agent_id,
                "agent_name": agent.name, "action_type": kind, "action_args": args, "result": None,
                "success": True}
