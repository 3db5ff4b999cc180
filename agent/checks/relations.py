"""Who did what to whom, as a text says it and as the tool results hold it (docs/formats.md#claim-check).

Pure text work, no I/O, in English and Chinese. A *relation* is a sentence's claim that names agents,
camps or platforms in a role: who reacted (most) to whom, who is most active or most reacted to, who
changed sides (from and to which camp, before or after the trigger), which camp is the largest, which
platform led, in which round the trigger landed, whose id a name is given. The agents' names are known
from the evidence, so they are found as substrings (a Chinese name has no capital letters). A relation the
evidence does not hold is named, as the claim check names a figure it lacks: `unsupported` returns them
for one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

STANCES = ("supportive", "opposing", "neutral", "observer")
STANCES_ZH = {"支持方": "supportive", "反对方": "opposing", "中立方": "neutral", "旁观方": "observer"}
STANCE = r"(supportive|opposing|neutral|observer|支持方|反对方|中立方|旁观方)"
PLATFORM = r"(twitter|reddit|facebook|instagram|linkedin|tiktok|youtube|weibo|wechat|telegram|mastodon)"
HARD = re.compile(r"[;；:：]")  # a clause ends here: the roles of names do not cross it
SOFT = re.compile(r"[;；:：]|\b(?:while|whereas|but|although)\b|，(?:而|但)")
ASIDE = re.compile(r"\([^()]*\)|（[^（）]*）|“[^“”]*”|\"[^\"]*\"")  # ids, stances and quotations: no roles
OTHERS = re.compile(r"(?:\b(?:others|other agents|everyone|the rest|agents|users|participants)|其他人|其他参与者|"
                    r"大家|众人|多数人|参与者)\s*$", re.I)
PRONOUN = re.compile(r"(?:\b(?:they|he|she|it|who|which)|他们|她们|他|她)\s*$", re.I)
REACTED = re.compile(r"\b(?:reacted|responded|replied|reacting|responding|replying)\s+(?:\w+\s+){0,2}?to\b|"
                     r"\b(?:reposted|quoted|commented on|liked|followed)\b(?!\s+by\b)|"
                     r"(?:回应|回复|转发|评论|点赞|引用|关注)了|回应最多的(?:是|对象是)|最常回应", re.I)
REACTED_TO = re.compile(r"\b(?:drew|received|got|attracted)\s+(?:the\s+)?most\s+(?:reactions|replies|responses|"
                        r"engagement|attention)|\bmost\s+(?:reacted|responded|replied)[- ]to\b|"
                        r"\bmost[- ]engaged[- ]with\b|最受关注|受到(?:了)?最多(?:的)?回应|获得(?:了)?最多(?:的)?回应|"
                        r"被回应最多", re.I)
ACTIVE = re.compile(r"\bmost active\b(?!\s+(?:rounds?|platforms?|periods?|phases?|days?|hours?)\b)|"
                    r"最(?:为)?活跃(?!的(?:一轮|轮次|平台|时段))", re.I)
DOMINANT = re.compile(r"\bdominat(?:ing|ed|es|e)\b|\bled the (?:debate|discussion|conversation)\b|"
                      r"主导了?(?:讨论|辩论)?", re.I)
SHIFTED = re.compile(r"\b(?:changed|switched|swapped|flipped)\s+(?:sides?|camps?|stances?|positions?|"
                     r"(?:his|her|their)\s+(?:stance|position|side|camp|minds?))|"
                     r"\b(?:moved|switched|shifted|defected|crossed over|went over|turned)\s+to\s+the\s+\w+\s+"
                     r"(?:camp|side)|\bspoke for the \w+ camp|\bnow speaks? for\b|"
                     r"\b(?:moved|switched|shifted|went|turned|crossed)\s+(?:over\s+)?to\s+(?:another|a different|the other|"
                     r"the opposite)\s+(?:camp|side)|"
                     r"改变了?立场|转变了?立场|立场(?:发生了?)?(?:转变|变化|改变)|转向了?|倒向了?|换了?阵营|"
                     r"为(?:支持方|反对方|中立方|旁观方)(?:说话|发声)", re.I)
NO_SHIFT = re.compile(r"\b(?:no one|nobody|no agent|none of the agents)\b.{0,40}\b(?:changed|switched|moved)|"
                      r"没有(?:人|参与者).{0,20}(?:改变|转向)", re.I)
TO_CAMP = re.compile(rf"(?:\bto the|\bfor the|转向了?|倒向了?|为)\s*{STANCE}", re.I)
FROM_CAMP = re.compile(rf"\bfrom (?:the )?{STANCE}\b|\b{STANCE} by profile|档案立场(?:是|为){STANCE}", re.I)
LARGEST = re.compile(rf"\b(?:the\s+)?{STANCE}s?\s+(?:camp\s+|agents\s+|side\s+)?(?:is|was|are|were)\s+"
                     rf"(?:by far\s+)?(?:the\s+)?(?:largest|biggest)|\b(?:largest|biggest)\s+(?:camp|side|group)\s+"
                     rf"(?:is|was)\s+(?:the\s+)?{STANCE}|{STANCE}(?:阵营)?(?:的)?人数最多|{STANCE}(?:阵营)?是?最大的?阵营|"
                     rf"最大的阵营是{STANCE}", re.I)
LEADS = re.compile(rf"\b{PLATFORM}\s+(?:led|leads|dominated|kept the debate going|carried the debate|"
                   rf"was (?:the )?(?:busier|busiest|louder|more active|most active))|"
                   rf"{PLATFORM}上?的?讨论持续升温|{PLATFORM}上?(?:更活跃|更热烈|领先|占主导|最活跃)", re.I)
AFTER = re.compile(r"\bafter (?:round (\d+)|the (?:trigger|event|scheduled event|announcement))|"
                   r"第(\d+)轮之后|(?:预定)?事件(?:发生)?之后", re.I)
AHEAD = re.compile(r"\bupper hand\b|\bprevail(?:s|ed|ing)?\b|\b(?:won|wins?|winning)\s+(?:the\s+)?(?:debate|argument|"
                   r"discussion)|\b(?:is|are|was|were)\s+(?:clearly\s+)?(?:winning|ahead|leading)\b(?!\s+to\b)|"
                   r"\bleads\b(?!\s+to\b)|\b(?:took|takes|take|has|have|had|holds?|held)\s+the\s+lead\b|\bin the lead\b|"
                   r"\bdominat(?:es|ed|ing)\b|占(?:了|据了?)?上风|占(?:据了?)?(?:主导|优势)|领先|胜出|获胜|取胜|"
                   r"赢得了?(?:辩论|讨论|争论)", re.I)
FOLLOWS = re.compile(r"\s*(?:的|者)(?:是|为)|\s+(?:went|goes|belongs?|fell)\s+to\b")  # who leads is named after the cue
BEFORE = re.compile(r"\bbefore (?:round (\d+)|the (?:trigger|event|scheduled event|announcement))|"
                    r"第(\d+)轮之前|(?:预定)?事件(?:发生)?之前", re.I)

ORDINALS = {w: n for n, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth".split(), 1)}
EVENT = r"(?:the\s+)?(?:scenario'?s\s+)?(?:scheduled\s+event|trigger(?:ing event)?)"
WHICH_ROUND = r"(?:round\s+(\d+)|the\s+(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final)\s+round)"
LANDED = r"(?:landed|came|hit|happened|arrived|struck|took place|occurred)"
TRIGGERED = re.compile(rf"\b(?:in|at|during)\s+{WHICH_ROUND},?\s+{EVENT}\s+{LANDED}|"
                       rf"\b{EVENT}\s+{LANDED}\s+(?:in|at|during)\s+{WHICH_ROUND}|"
                       rf"\b{WHICH_ROUND}\s+(?:is|was)\s+when\s+{EVENT}|"
                       r"(?:预定)?事件(?:发生|出现|到来)(?:在|于)第(\d+)轮|第(\d+)轮(?:发生了|迎来了?|出现了)(?:预定)?事件", re.I)


@dataclass(frozen=True)
class Shift:
    """An agent who changed sides: the camp of their profile, the one they spoke for, from which round."""

    stated: str
    now: str
    from_round: int


@dataclass(frozen=True)
class Relations:
    """What the tool results say about roles: the agents' names and who holds which role."""

    names: frozenset[str] = frozenset()
    engaged: frozenset[str] = frozenset()  # the agents others reacted to most
    active: frozenset[str] = frozenset()
    shifts: Mapping[str, Shift] = field(default_factory=dict)
    shifts_known: bool = False  # the results held a list of side-changers (perhaps empty)
    chains: frozenset[tuple[str, str]] = frozenset()  # (who acted, on whom)
    sizes: tuple[Mapping[str, int], ...] = ()  # camps by profile, camps by what agents wrote
    platforms: Mapping[str, int] = field(default_factory=dict)
    rounds: tuple[Mapping[str, Any], ...] = ()
    trigger: int | None = None
    agents: Mapping[str, str] = field(default_factory=dict)  # "agent:7" -> the agent's name
    stances: Mapping[str, str] = field(default_factory=dict)  # an agent's name -> the stance of its profile


@dataclass
class RelationCollector:
    """Gathers the roles from every result a section saw (JSON values) and the planning context."""

    names: set[str] = field(default_factory=set)
    engaged: set[str] = field(default_factory=set)
    active: set[str] = field(default_factory=set)
    shifts: dict[str, Shift] = field(default_factory=dict)
    shifts_known: bool = False
    chains: set[tuple[str, str]] = field(default_factory=set)
    sizes: list[Mapping[str, int]] = field(default_factory=list)
    platforms: dict[str, int] = field(default_factory=dict)
    rounds: list[Mapping[str, Any]] = field(default_factory=list)
    trigger: int | None = None
    agents: dict[str, str] = field(default_factory=dict)
    stances: dict[str, str] = field(default_factory=dict)

    def add(self, value: Any) -> None:
        if isinstance(value, list):
            for v in value:
                self.add(v)
        if not isinstance(value, dict):
            return
        self._named(value)
        self.engaged |= _names_of(value.get("most_engaged_agents"))
        self.active |= _names_of(value.get("most_active_agents"))
        if isinstance(value.get("stance_shifts"), list):
            self.shifts_known = True
            for s in value["stance_shifts"]:
                if isinstance(s, dict) and s.get("name"):
                    self.shifts[s["name"]] = Shift(str(s.get("stated_stance", "")), str(s.get("now_speaks_for", "")),
                                                   int(s.get("from_round") or 0))
        for key in ("expressed", "stances"):
            if isinstance(value.get(key), dict) and all(isinstance(n, int) for n in value[key].values()):
                self.sizes.append(value[key])
        if isinstance(value.get("actions_by_platform"), dict):
            self.platforms.update(value["actions_by_platform"])
        elif isinstance(value.get("platforms"), dict):  # the planning context: {platform: {"actions": n, ...}}
            self.platforms.update({p: v["actions"] for p, v in value["platforms"].items()
                                   if isinstance(v, dict) and isinstance(v.get("actions"), int)})
        if isinstance(value.get("per_round"), list) and not self.rounds:
            self.rounds = [r for r in value["per_round"] if isinstance(r, dict) and "round" in r]
        events = value.get("scheduled_events")
        if isinstance(events, list) and events and isinstance(events[0], dict) and self.trigger is None:
            self.trigger = int(events[0].get("round") or 0) or None
        for v in value.values():
            self.add(v)

    def _named(self, value: dict[str, Any]) -> None:
        for key in ("name", "from_name", "to_name"):
            if isinstance(value.get(key), str) and len(value[key]) > 1:
                self.names.add(value[key])
        for ref, name in ((value.get("ref"), value.get("name")), (value.get("from"), value.get("from_name")),
                          (value.get("to"), value.get("to_name"))):
            if isinstance(ref, str) and ref.startswith("agent:") and isinstance(name, str):
                self.agents[ref] = name
        if isinstance(value.get("name"), str) and str(value.get("stance", "")).lower() in STANCES:
            self.stances[value["name"]] = str(value["stance"]).lower()
        if isinstance(value.get("from_name"), str) and isinstance(value.get("to_name"), str):
            self.chains.add((value["from_name"], value["to_name"]))
        agent = value.get("agent")
        if isinstance(agent, dict) and isinstance(value.get("engaged_with"), list):
            self.chains |= {(str(agent.get("name")), str(c.get("to_name"))) for c in value["engaged_with"]
                            if isinstance(c, dict)}

    def relations(self) -> Relations:
        return Relations(frozenset(self.names), frozenset(self.engaged), frozenset(self.active), dict(self.shifts),
                         self.shifts_known, frozenset(self.chains), tuple(self.sizes), dict(self.platforms),
                         tuple(self.rounds), self.trigger, dict(self.agents), dict(self.stances))


def _names_of(agents: Any) -> set[str]:
    return {a["name"] for a in agents if isinstance(a, dict) and isinstance(a.get("name"), str)} \
        if isinstance(agents, list) else set()


def unsupported(sentence: str, rel: Relations) -> list[str]:
    """The relations `sentence` states that the evidence does not hold, each in a few words."""
    text = _plain(sentence)
    found = _mentions(text, rel.names)
    return list(dict.fromkeys([*_misnamed(sentence, rel), *_reactions(text, found, rel), *_passive(text, found, rel),
                               *_shifts(text, found, rel), *_largest(text, rel), *_ahead(text, found, rel),
                               *_leads(text, rel),
                               *_triggered(text, rel)]))


def _plain(sentence: str) -> str:
    """The sentence without asides (ids, stances in brackets, quotations): roles are read from the rest."""
    previous = None
    while previous != sentence:
        previous, sentence = sentence, ASIDE.sub(" ", sentence)
    return sentence


Mention = tuple[int, int, str]  # start, end, name
NAMED_ID = re.compile(r"(\w[\w' -]*?)\s*[(（]\s*(agent:\d+)")


def _misnamed(sentence: str, rel: Relations) -> list[str]:
    """`Tariq Karimi (agent:23)` where agent:23 is another agent: the name before an id must be that id's."""
    out = []
    for m in NAMED_ID.finditer(sentence):
        name, ref = m.group(1).strip(), m.group(2)
        known = rel.agents.get(ref)
        if known and not name.endswith(known) and any(n != known and name.endswith(n) for n in rel.names):
            out.append(f"{name.split(', ')[-1]} is not {ref}")
    return out


def _mentions(text: str, names: frozenset[str]) -> list[Mention]:
    """Where each known name occurs, longest names first, not overlapping (ASCII names as whole words)."""
    taken: list[Mention] = []
    for name in sorted(names, key=len, reverse=True):
        edge = r"(?<![A-Za-z])" if name[:1].isascii() else ""
        for m in re.finditer(edge + re.escape(name) + (r"(?![A-Za-z])" if name[-1:].isascii() else ""), text):
            if not any(m.start() < e and s < m.end() for s, e, _ in taken):
                taken.append((m.start(), m.end(), name))
    return sorted(taken)


def _between(found: list[Mention], start: int, end: int) -> list[str]:
    return list(dict.fromkeys(n for s, e, n in found if start <= s and e <= end))


def _clause_start(text: str, at: int, stop: re.Pattern[str], after: int = 0) -> int:
    return max([after, *(m.end() for m in stop.finditer(text, 0, at))])


def _clause_end(text: str, at: int, stop: re.Pattern[str]) -> int:
    m = stop.search(text, at)
    return m.start() if m else len(text)


def _cues(pattern: re.Pattern[str], text: str) -> Iterator[tuple[re.Match[str], int]]:
    """Each cue with where its own part of the text begins (after the previous cue of its kind)."""
    previous = 0
    for m in pattern.finditer(text):
        yield m, previous
        previous = m.end()


def _reactions(text: str, found: list[Mention], rel: Relations) -> list[str]:
    """`A reacted (most) to B`: a chain from A to B in the evidence; `others reacted most to B`: B among the
    agents others reacted to most."""
    out = []
    for m, previous in _cues(REACTED, text):
        start = _clause_start(text, m.start(), HARD, previous)
        end = min(_clause_end(text, m.end(), HARD), next((c.start() for c in REACTED.finditer(text, m.end())),
                                                         len(text)))
        subjects, objects = _between(found, start, m.start()), _between(found, m.end(), end)
        lead = text[start:m.start()]
        if subjects:
            out += [f"{s} reacted to {o}" for s in subjects for o in objects if (s, o) not in rel.chains]
        elif PRONOUN.search(lead) and not OTHERS.search(lead):
            continue  # "they reacted to B": whose reaction, the sentence does not say
        elif re.search(r"most|最", m.group(0), re.I):
            out += [f"others reacted most to {o}" for o in objects if o not in rel.engaged]
        else:
            out += [f"others reacted to {o}" for o in objects if o not in {t for _, t in rel.chains} | rel.engaged]
    return out


def _passive(text: str, found: list[Mention], rel: Relations) -> list[str]:
    """`B drew the most reactions`, `A was the most active`, `with A and B dominating`: the names of the clause
    (before the cue, or after it when none is before) in the evidence's list (the most active or most reacted to,
    for who dominated)."""
    out = []
    for pattern, held, role in ((REACTED_TO, rel.engaged, "most reacted to"), (ACTIVE, rel.active, "most active"),
                                (DOMINANT, rel.active | rel.engaged, "dominated the debate")):
        for m in pattern.finditer(text):
            before = _between(found, _clause_start(text, m.start(), SOFT), m.start())
            names = before or _between(found, m.end(), _clause_end(text, m.end(), SOFT))
            out += [f"{n} {role}" for n in names if n not in held]
    return out


def _shifts(text: str, found: list[Mention], rel: Relations) -> list[str]:
    """`A changed sides (from X) (to Y) (after the trigger)`: A among the side-changers, with those camps and
    that timing; `no one changed sides` when someone did."""
    if NO_SHIFT.search(text) and rel.shifts:
        return ["no one changed sides"]
    out = []
    for m, previous in _cues(SHIFTED, text):
        start = _clause_start(text, m.start(), HARD, previous)
        names = _between(found, start, m.start()) or _between(found, m.end(), _clause_end(text, m.end(), HARD))
        if not names and not rel.shifts_known:
            out.append("changed sides")
            continue
        part = text[start:_clause_end(text, m.end(), HARD)]
        to = TO_CAMP.search(m.group(0)) or TO_CAMP.search(text, m.start(), _clause_end(text, m.end(), HARD))
        since = FROM_CAMP.search(part)
        for name in names:
            shift = rel.shifts.get(name)
            if shift is None:
                out.append(f"{name} changed sides")
            elif to and _stance(to) != shift.now:
                out.append(f"{name} changed to {_stance(to)}")
            elif since and _stance(since) != shift.stated:
                out.append(f"{name} changed from {_stance(since)}")
            elif not _timed(text, shift.from_round, rel.trigger):
                out.append(f"{name} changed sides in round {shift.from_round}")
    return out


def _ahead(text: str, found: list[Mention], rel: Relations) -> list[str]:
    """`X gained the upper hand`, `占上风的是A和B`: a camp given the lead must be the only largest (by profile or by
    what agents wrote); an agent given it must be of the camp the sentence gives it to (or, when it names none, of
    the largest camp), by profile or by the camp it came to speak for."""
    out = []
    for m in AHEAD.finditer(text):
        start, end = _clause_start(text, m.start(), SOFT), _clause_end(text, m.end(), SOFT)
        end = end if FOLLOWS.match(text, m.end()) or m.group(0).lower() == "upper hand" else m.end()
        names = _between(found, start, m.start()) or _between(found, m.end(), end)
        camps = _camps(text[start:m.start()]) or _camps(text[m.end():end])
        if not names:
            out += [f"the {c} camp has the upper hand" for c in camps if not _winning(c, rel)]
            continue
        sides = camps or _camps(text)
        for name in names:
            held = _sides_of(name, rel)
            if held and sides and not held & set(sides):
                out.append(f"{name} ({'/'.join(sorted(held))}) has the upper hand for the {'/'.join(sides)} camp")
            elif held and not sides and not DOMINANT.match(m.group(0)) and not any(_winning(h, rel) for h in held):
                out.append(f"{name} ({'/'.join(sorted(held))}) has the upper hand")
    return out


def gives_the_lead(text: str) -> bool:
    """Whether the text gives a side or an agent the upper hand (outside quotations), whoever it names."""
    return bool(AHEAD.search(_plain(text)))


def _camps(text: str) -> list[str]:
    return list(dict.fromkeys(STANCES_ZH.get(w, w.lower()) for w in re.findall(STANCE, text, re.I)))


def _sides_of(name: str, rel: Relations) -> set[str]:
    """The camps an agent stands in: its profile's, and the one it came to speak for when it changed sides."""
    shift = rel.shifts.get(name)
    said = [rel.stances.get(name, "")] + ([shift.stated, shift.now] if shift else [])
    return {s for s in said if s}


def _winning(camp: str, rel: Relations) -> bool:
    return any(_unique_max(sizes) == camp for sizes in rel.sizes)


def _stance(m: re.Match[str]) -> str:
    word = next(g for g in m.groups() if g)
    return STANCES_ZH.get(word, word.lower())


def _timed(text: str, round_no: int, trigger: int | None) -> bool:
    """Whether a side-change from `round_no` fits `before/after the trigger` as the sentence says it."""
    if trigger is None:
        return not (re.search(r"\b(?:trigger|event)\b|事件", text) and (AFTER.search(text) or BEFORE.search(text)))
    after = [m for m in AFTER.finditer(text) if not any(m.groups())]
    before = [m for m in BEFORE.finditer(text) if not any(m.groups())]
    return not (after and round_no < trigger) and not (before and round_no >= trigger)


def _largest(text: str, rel: Relations) -> list[str]:
    """`The X camp is the largest`: X the only largest camp by profile or by what the agents wrote."""
    out = []
    for m in LARGEST.finditer(text):
        stance = _stance(m)
        if not _winning(stance, rel):
            out.append(f"the {stance} camp is the largest")
    return out


def _unique_max(sizes: Mapping[str, int]) -> str | None:
    ranked = sorted(((n, s) for s, n in sizes.items() if s), reverse=True)
    return ranked[0][1] if ranked and (len(ranked) == 1 or ranked[0][0] > ranked[1][0]) else None


def _leads(text: str, rel: Relations) -> list[str]:
    """`X led` (after or before round N): X had the most actions, in that window when one is named."""
    out = []
    for m in LEADS.finditer(text):
        platform = next(g for g in m.groups() if g).lower()
        after, before = AFTER.search(text), BEFORE.search(text)
        window = after or before
        if window:
            n = next((int(g) for g in window.groups() if g), rel.trigger)
            rows = [r for r in rel.rounds if n is not None and (
                r["round"] > n if window is after else 0 < r["round"] and int(r.get("last_round", r["round"])) < n)]
            totals = {p: sum(float(r.get(p) or 0) for r in rows) for p in rel.platforms}
        else:
            totals = {p: float(v) for p, v in rel.platforms.items()}
        if not totals or totals.get(platform, -1.0) < max(totals.values()):
            out.append(f"{platform} led")
    return out


def _triggered(text: str, rel: Relations) -> list[str]:
    """`In the first round, the scheduled event landed`: the round the sentence gives the trigger is its round."""
    out = []
    for m in TRIGGERED.finditer(text):
        said = next(g for g in m.groups() if g).lower()
        last = max((int(r.get("last_round", r["round"])) for r in rel.rounds), default=None)
        n = int(said) if said.isdigit() else last if said in ("last", "final") else ORDINALS[said]
        if rel.trigger is not None and n != rel.trigger:
            out.append(f"the scheduled event in round {n}")
    return out
