"""Camps read from what agents wrote: each camp's most repeated arguments, and who changed sides.

Pure. Statements with the same text once digits are masked ("a £7 charge", "a £12 charge")
make one argument, and so do statements the analysis found to say the same thing in other words
(`meaning`: each wording's group, named by its representative wording; analysis/meaning.py).
An argument's camp is the stance most common among its authors; an
agent whose statements, from some round on, all belong to one other camp changed sides.
Authors of a statement never vote on their own statement's camp. A statement a model labelled
(agent/report/stance_labels.py), or one off the run's topic (labelled `none`), speaks for its label instead of its
author's stance.

The input is what the fold keeps per agent and argument (`projections.simulation.Sayings`),
not the statements: all of an agent's statements of one argument fall in the same camp, so
where the first and last of them stand, and how many there are, decide what reading each
statement in (round, ref) order would (tests/agent/test_camps_tally.py holds the two side by side).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any, NamedTuple

At = tuple[int, str, int]  # a statement's place: (round, ref, log position), the order of the run


class Saying(NamedTuple):
    """One agent's statements of one argument: how many, the first (with its text) and the last, and the
    first post or quote among them (None when they are all comments)."""

    agent: int
    key: str
    name: str
    stance: str
    statements: int
    first: At
    first_text: str
    last: At
    posts: int
    first_post: At | None
    post_text: str | None
    label: str = ""  # the stance a model labelled these statements with (`none`: no side), else ''


def saying(row: tuple[Any, ...]) -> Saying:
    """A row of `simulation_queries.sayings`."""
    agent, key, name, stance, said, fr, fref, fpos, ftext, lr, lref, lpos, posts, pr, pref, ppos, ptext = row
    return Saying(agent, key, name, stance, said, (fr, fref, fpos), ftext, (lr, lref, lpos), posts,
                  (pr, pref, ppos) if posts else None, ptext)


def camps_from_sayings(rows: Iterable[tuple[Any, ...]], top: int = 3, meaning: Mapping[str, str] | None = None,
                       labels: Mapping[tuple[int, str], str] | None = None,
                       off_topic: Collection[str] = ()) -> dict[str, Any]:
    """`arguments`: per camp its most repeated arguments; `stance_shifts`: agents who changed sides;
    `expressed`: how many agents speak for each camp by what they wrote (a side-changer for their new one).
    `labels`: stances a model gave statements, by (agent, wording): a labelled statement votes its label.
    `off_topic`: wordings that take no side (analysis/meaning.py, `off_topic`), as if labelled `none`."""
    said = _with_labels(rows, labels or {}, off_topic)
    examples = _examples(said, meaning or {})
    shifts, said = _side_changes(said, meaning or {})
    voices = _voices(said, _moved(shifts))
    return {"arguments": _arguments(said, voices, top, examples),
            "stance_shifts": [{k: v for k, v in s.items() if not k.startswith("_")} for s in shifts],
            "expressed": _expressed(said, voices, shifts)}


def statement_stances(rows: Iterable[tuple[Any, ...]], meaning: Mapping[str, str] | None = None,
                      labels: Mapping[tuple[int, str], str] | None = None,
                      off_topic: Collection[str] = ()) -> dict[tuple[int, str], str]:
    """The stance each agent's wording speaks for, by (agent, wording): the model's label where it gave one
    ('' for `none`), else its author's stance at the time, that is their profile's, or from their change of
    side on (found from the arguments) the camp they moved to. Measured on statements written anew
    (bench/analysis_quality.py), an argument's camp is a worse guess for one statement than its author's
    stance: partisans ask the neutral camp's questions too."""
    said = _with_labels(rows, labels or {}, off_topic)
    shifts, _ = _side_changes(said, meaning or {})
    turned = {s["agent_id"]: (s["from_round"], s["now_speaks_for"]) for s in shifts}
    return {(s.agent, s.key): _spoken(s) if s.label else turn[1] if (turn := turned.get(s.agent))
            and s.first[0] >= turn[0] else s.stance for s in said}


NONE = "none"  # the label of a statement that takes no side
MAX_READINGS = 5  # of the side changes at most: each finds the side-changers the one before it hid
MIN_LABELS, AT_LEAST_LABELLED = 3, 2  # labels that decide an agent's change of side; of them, after the turn


def _with_labels(rows: Iterable[tuple[Any, ...]], labels: Mapping[tuple[int, str], str],
                 off_topic: Collection[str]) -> list[Saying]:
    """The rows as sayings, each with its label: the model's, else `none` for a wording off the topic."""
    return [s._replace(label=labels.get((s.agent, s.key)) or (NONE if s.key in off_topic else ""))
            for s in map(saying, rows)]


def _spoken(s: Saying) -> str:
    """The stance a saying speaks for: its label ('' for `none`), else its author's stated stance."""
    return ("" if s.label == NONE else s.label) if s.label else s.stance


def _side_changes(said: list[Saying], meaning: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[Saying]]:
    """Who changed sides, and the sayings grouped by meaning. An agent with at least MIN_LABELS labelled
    statements changed sides by their labels alone; the others by the arguments their statements fall in,
    read again without the words every side-changer found so far said in their change among the votes, until
    a reading finds no one new: partisans who turn together write the same new arguments, and their profiles'
    stances vote those into the old camp, hiding one another."""
    by_labels = _label_shifts(said)
    grouped = _grouped(said, meaning) if meaning else said
    shifts: list[dict[str, Any]] = []
    left_out: dict[int, dict[str, Any]] = {}  # every side-changer found so far, as last found
    for _ in range(MAX_READINGS):
        found = _shifts(grouped, _voices(grouped, _moved(list(left_out.values()))), bool(meaning))
        shifts = sorted([s for s in found if s["agent_id"] not in by_labels] + [s for s in by_labels.values() if s],
                        key=lambda s: s["agent_id"])
        new = any(s["agent_id"] not in left_out for s in shifts)
        left_out.update((s["agent_id"], s) for s in shifts)
        if not new:
            break
    return shifts, grouped


def _label_shifts(said: list[Saying]) -> dict[int, dict[str, Any] | None]:
    """Per agent with at least MIN_LABELS labels that take a side, their change of side by those labels (None:
    none): from one label for a partisan camp other than their own on, 80% of their labels are for it."""
    placed: dict[int, list[tuple[Saying, str]]] = {}
    for s in said:
        if s.label and s.label != NONE:
            placed.setdefault(s.agent, []).append((s, s.label))
    return {agent: _shift_by_meaning(agent, labelled, AT_LEAST_LABELLED)
            for agent, labelled in sorted(placed.items()) if len(labelled) >= MIN_LABELS}


def _held(votes: Counter[str] | None, by: int = 3, share: float = 0.6) -> str:
    """The camp most of an argument's authors hold (at least `by` of them, `share` of them), else '': what
    places a statement for a change of side read by meaning, where a group's plurality is too weak a sign."""
    ranked = (votes or Counter()).most_common(2)
    total = sum((votes or Counter()).values())
    top = ranked[0][1] if ranked else 0
    clear = total >= by and top >= share * total and (len(ranked) < 2 or ranked[1][1] < top)
    return ranked[0][0] if clear else ""


def _grouped(said: list[Saying], meaning: Mapping[str, str]) -> list[Saying]:
    """One saying per agent and group of wordings: counts added, the earliest first and the latest last."""
    merged: dict[tuple[int, str], Saying] = {}
    for s in sorted(said, key=lambda s: s.first):
        s = s._replace(key=meaning.get(s.key, s.key))
        had = merged.get((s.agent, s.key))
        if had is None:
            merged[(s.agent, s.key)] = s
            continue
        later_post = had.first_post is None or (s.first_post is not None and s.first_post < had.first_post)
        first_post, post_text = (s.first_post, s.post_text) if later_post else (had.first_post, had.post_text)
        label = s.label if not had.label or had.label == s.label else had.label if not s.label else ""
        merged[(s.agent, s.key)] = had._replace(
            statements=had.statements + s.statements, posts=had.posts + s.posts, first_post=first_post,
            post_text=post_text, last=max(had.last, s.last), label=label)
    return list(merged.values())


def _examples(said: list[Saying], meaning: Mapping[str, str]) -> dict[str, tuple[At, Saying]]:
    """Per group, the first post in its representative wording (the wording its group is named by)."""
    out: dict[str, tuple[At, Saying]] = {}
    for s in said:
        if s.first_post is not None and meaning.get(s.key, s.key) == s.key:
            if s.key not in out or s.first_post < out[s.key][0]:
                out[s.key] = (s.first_post, s)
    return out


def _expressed(said: list[Saying], voices: Voices, shifts: list[dict[str, Any]]) -> dict[str, int]:
    """Agents per camp by the camps their statements were placed in (most statements; a tie: their profile's)."""
    tallies, moved = _tallies(voices), {s["agent_id"]: s["now_speaks_for"] for s in shifts}
    spoken: dict[int, Counter[str]] = {}
    stated: dict[int, str] = {}
    for s in said:
        stated[s.agent] = s.stance
        own = (s.agent, _spoken(s)) in voices.get(s.key, ())
        if camp := _camp(tallies.get(s.key), _spoken(s) if own else None):
            spoken.setdefault(s.agent, Counter())[camp] += s.statements
    sides: Counter[str] = Counter()
    for agent, counts in spoken.items():
        ranked = counts.most_common()
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        sides[moved.get(agent) or (stated[agent] if tied and stated[agent] in counts else ranked[0][0])] += 1
    return dict(sorted(sides.items()))


Voices = dict[str, set[tuple[int, str]]]  # per argument key, its distinct (author, stance spoken for)


def _moved(shifts: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per side-changer, the rounds of their change: from the one after their last statement for their own
    stance to their last for the other side. What they said only in them is left out of the votes: words in
    between take neither side clearly, and would vote for the side they left."""
    return {s["agent_id"]: (s["_from"], s["_to"]) for s in shifts}


def _voices(said: list[Saying], moved: dict[int, tuple[int, int]]) -> Voices:
    """Per argument, its distinct authors with the stance each spoke for (side-changers' later words left out:
    an author votes if they said it in a round outside those, i.e. first before them or last after them)."""
    authors: Voices = {}
    for s in said:
        rounds, stance = moved.get(s.agent), _spoken(s)
        if stance and (rounds is None or s.first[0] < rounds[0] or s.last[0] > rounds[1]):
            authors.setdefault(s.key, set()).add((s.agent, stance))
    return authors


def _tallies(voices: Voices) -> dict[str, Counter[str]]:
    """Per argument, how many of its authors speak for each stance (counted once, not per statement)."""
    return {key: Counter(stance for _, stance in authors) for key, authors in voices.items()}


def _camp(votes: Counter[str] | None, abstaining: str | None = None) -> str:
    """The stance most of an argument's authors hold ('' when none, or a tie); `abstaining` is the stance
    of an author whose own statement is being placed: theirs is not counted."""
    best, top, tied = "", 0, False
    for stance, count in (votes or {}).items():
        count -= stance == abstaining
        if count > top:
            best, top, tied = stance, count, False
        elif count == top and count > 0:
            tied = True
    return "" if tied else best


def _shifts(said: list[Saying], voices: Voices, by_meaning: bool = False) -> list[dict[str, Any]]:
    """Agents whose statements, from one on, are all of one camp other than their stated stance (at least
    two of them, from round 1 on); `by_meaning`: most of them (arguments read by meaning place a statement
    by likeness, and one misplaced statement must not hide a change of side)."""
    by_agent: dict[int, list[tuple[Saying, str]]] = {}
    tallies = _tallies(voices)
    for s in said:
        if s.label:  # a labelled statement is placed by its label (`none`: not placed)
            if s.label != NONE:
                by_agent.setdefault(s.agent, []).append((s, s.label))
            continue
        own = (s.agent, s.stance) in voices.get(s.key, ())  # never a vote on one's own words
        votes = tallies.get(s.key)
        if by_meaning and own and votes is not None:
            votes = votes - Counter({s.stance: 1})
        if camp := (_held(votes) if by_meaning else _camp(votes, s.stance if own else None)):
            by_agent.setdefault(s.agent, []).append((s, camp))
    decide = _shift_by_meaning if by_meaning else _shift
    return [shift for agent, placed in sorted(by_agent.items()) if (shift := decide(agent, placed))]


def _shift(agent: int, placed: list[tuple[Saying, str]]) -> dict[str, Any] | None:
    """The agent's change of side, if its placed statements make one: those after the first one for another
    camp (`turn`) are all for that camp, and none for its own stance comes after it."""
    stated = placed[0][0].stance
    other = [(s, camp) for s, camp in placed if camp != stated]
    if not other:
        return None
    turn, camp = min(other, key=lambda sc: sc[0].first)
    after = sum(s.statements for s, _ in other)
    if any(c != camp for _, c in other) or any(s.last > turn.first for s, c in placed if c == stated) \
            or after < 2 or turn.first[0] <= 0:
        return None
    return _shift_found(agent, turn, camp, stated, after, placed, max(s.last[0] for s, _ in other))


PARTISAN = ("supportive", "opposing")
MOST_AFTER, AT_LEAST_AFTER = 0.8, 3  # of a side-changer's statements from the turn on, for the new camp


def _shift_by_meaning(agent: int, placed: list[tuple[Saying, str]],
                      at_least: int = AT_LEAST_AFTER) -> dict[str, Any] | None:
    """The agent's change of side, when from one statement for a partisan camp other than their own on, at
    least 80% of their statements (and at least `at_least`) are for it and at most 20% for their own stance."""
    stated = placed[0][0].stance
    ordered = sorted(placed, key=lambda sc: sc[0].first)
    for i, (turn, camp) in enumerate(ordered):
        if camp == stated or camp not in PARTISAN or turn.first[0] <= 0:
            continue
        after = ordered[i:]
        total = sum(s.statements for s, _ in after)
        same = sum(s.statements for s, c in after if c == camp)
        back = sum(s.statements for s, c in after if c == stated)
        if same >= at_least and same >= MOST_AFTER * total and back <= (1 - MOST_AFTER) * total:
            return _shift_found(agent, turn, camp, stated, same, ordered[:i],
                                max(s.last[0] for s, c in after if c == camp))
    return None


def _shift_found(agent: int, turn: Saying, camp: str, stated: str, after: int,
                 before: list[tuple[Saying, str]], to: int) -> dict[str, Any]:
    held = max((s.last[0] for s, c in before if c == stated and s.last < turn.first), default=-1)
    return {"agent": f"agent:{agent}", "agent_id": agent, "name": turn.name, "stated_stance": stated,
            "now_speaks_for": camp, "from_round": turn.first[0], "statements_after": after,
            "statements_before": sum(s.statements for s, c in before if c == stated),
            "example": {"ref": turn.first[1], "content": turn.first_text}, "_from": min(held + 1, turn.first[0]),
            "_to": to}


def _arguments(said: list[Saying], voices: Voices, top: int,
               examples: dict[str, tuple[At, Saying]]) -> dict[str, list[dict[str, Any]]]:
    """Per camp its `top` arguments by posts and quotes, each with how many, by how many authors, the rounds it
    was said in, and an example: the first post in its representative wording (else its first post)."""
    groups: dict[str, list[tuple[At, Saying]]] = {}
    for s in said:
        if s.first_post is not None:
            groups.setdefault(s.key, []).append((s.first_post, s))
    counted = {key: sum(s.posts for _, s in items) for key, items in groups.items()}
    ranked: dict[str, list[dict[str, Any]]] = {}
    tallies = _tallies(voices)
    for key in sorted(groups, key=lambda k: (-counted[k], k)):
        camp = _camp(tallies.get(key))
        if camp and len(ranked.setdefault(camp, [])) < top:
            (_, ref, _), first = examples.get(key) or min(groups[key], key=lambda pair: pair[0])
            rounds = [min(s.first[0] for _, s in groups[key]), max(s.last[0] for _, s in groups[key])]
            ranked[camp].append({"statements": counted[key], "authors": len(groups[key]), "rounds": rounds,
                                 "example": {"ref": ref, "content": first.post_text,
                                             "agent": f"agent:{first.agent}", "name": first.name}})
    return {camp: ranked[camp] for camp in sorted(ranked) if ranked[camp]}
