"""The tools' answers as the agent reads them back: one TypedDict per answer and per part of one.

A tool writes its answer as JSON (agent/tools/simulation_tools.py, docs/architecture.md#tools) and the offline writers read it
back out of the conversation (agent/findings/facts.py `Facts`, findings/statements.py, offline_chat.py, guided.py);
these types name the fields they read, so a misspelt or renamed field is a type error rather than a section
that silently says less. Declarations only: nothing here builds, checks or changes an answer, and the JSON
the tools emit (what replay compares) stays as it is. Every type is `total=False`: a call that failed reads
back as `{}`, so a reader asks with `.get` for what it cannot do without.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast


class Named(TypedDict, total=False):
    """An agent as every answer names it: what a sentence shows of one (agent/findings/facts.py `who`)."""

    ref: str  # agent:7
    name: str


class AgentRef(Named, total=False):
    """An agent as a statement names it."""

    id: int
    stance: str


class Statement(TypedDict, total=False):
    """A post, quote or comment: a search hit, a timeline's first statement, an agent's statement."""

    ref: str  # post:twitter:42
    kind: str  # post, quote, comment; or profile: quick_search finds agents by their profile's words too
    platform: str
    round: int | None  # None for a profile
    content: str
    agent: AgentRef
    engagement: int  # an agent profile's statements and the context's sample posts only


class RoundRow(TypedDict, total=False):
    """Actions of one round (or, with `last_round`, of a span of rounds) per platform."""

    round: int
    last_round: int
    twitter: int
    reddit: int
    total: int
    divergence: float


class TurningPoint(TypedDict, total=False):
    """A round at least twice as busy as the rounds before it."""

    round: int
    volume: int
    rolling_mean: float
    baseline_rounds: list[int]  # [first, last] of the rounds the mean is of
    ratio: float


class Divergence(TypedDict, total=False):
    overall: float
    by_round: list[dict[str, Any]]  # {"round", "value"}


class Example(TypedDict, total=False):
    """The first statement of an argument or of a side-change."""

    ref: str
    content: str
    agent: str
    name: str


class Argument(TypedDict, total=False):
    statements: int
    authors: int
    example: Example


class StanceShift(TypedDict, total=False):
    """An agent whose statements moved to another camp than its profile's stance."""

    agent: str
    agent_id: int
    name: str
    stated_stance: str
    now_speaks_for: str
    from_round: int
    statements_after: int
    statements_before: int
    example: Example


class GroupedBy(TypedDict, total=False):
    meaning: str | None  # the embedder the arguments were grouped with (None: by exact wording)
    wordings: int
    compared: int
    note: str


class Camps(TypedDict, total=False):
    arguments: dict[str, list[Argument]]  # camp -> its arguments, most stated first
    stance_shifts: list[StanceShift]
    side_changers: int  # how many shifts there are: a figure a result cut to fit keeps whole
    expressed: dict[str, int]
    grouped_by: GroupedBy


class RankedAgent(Named, total=False):
    """An agent of the most active or most engaged list."""

    stance: str
    actions: int
    posts: int
    reactions: int
    shares: int
    comments: int
    likes: int


# Who engaged with whom, how (follow, like, quote...) and how often: `from` is a keyword, hence this form.
Chain = TypedDict("Chain", {"from": str, "from_name": str, "kind": str, "to": str, "to_name": str, "count": int,
                            "undone": int}, total=False)


class ProfiledAgent(Named, total=False):
    """An agent with its profile: `insight_forge`'s agents, `agent_profile`'s agent."""

    stance: str
    type: str  # insight_forge's
    entity_type: str  # agent_profile's
    bio: str
    actions: int


class ActionCount(TypedDict, total=False):
    action: str
    count: int


class Analytics(TypedDict, total=False):
    """`simulation_analytics`: the run's shape."""

    total_actions: int
    actions_by_platform: dict[str, int]
    rounds: int
    busiest_round: RoundRow | None
    per_round: list[RoundRow]
    turning_points: list[TurningPoint]
    divergence: Divergence
    most_active_agents: list[RankedAgent]
    most_engaged_agents: list[RankedAgent]
    action_mix: dict[str, list[ActionCount]]  # per platform, the most common first
    camps: Camps


class SearchAnswer(TypedDict, total=False):
    """`quick_search`."""

    query: str
    results: list[Statement]


class Finding(TypedDict, total=False):
    question: str
    evidence: list[Statement]


class InsightAnswer(TypedDict, total=False):
    """`insight_forge`: a question cut into sub-questions, each with its evidence."""

    query: str
    sub_questions: list[Finding]
    agents: list[ProfiledAgent]
    interaction_chains: list[Chain]


class TimelineEntry(TypedDict, total=False):
    round: int
    last_round: int
    platform: str
    statements: int
    first: Statement


class PanoramaAnswer(TypedDict, total=False):
    """`panorama_search`: what was said about a query over the whole run."""

    query: str
    matches: int
    timeline: list[TimelineEntry]
    current_statements: list[Statement]
    superseded_statements: list[Statement]
    undone_actions: int


class CoalitionsAnswer(TypedDict, total=False):
    """`coalitions` (agent/tools/coalitions.py)."""

    coalitions: list[dict[str, Any]]
    coalitions_found: int
    min_size: int
    mutual_follows: int
    cross_camp_mutual_follows: int
    agents_in_coalitions: int


class ProfileAnswer(TypedDict, total=False):
    """`agent_profile`."""

    agent: ProfiledAgent
    actions: int
    by_platform: dict[str, int]
    active_rounds: int
    first_round: int | None
    last_round: int | None
    stance_shift: StanceShift | None
    statements: int
    latest_statements: list[Statement]
    first_statements: list[Statement]
    engaged_with: list[Chain]
    engaged_by: list[Chain]


class Interview(TypedDict, total=False):
    agent: AgentRef
    agent_id: int
    question: str
    answer: str
    mode: str


class InterviewsAnswer(TypedDict, total=False):
    """`interview_agents` (daemon/interviews/interviewer.py): live or in persona, `mode` says which."""

    topic: str
    mode: str
    note: str
    interviews: list[Interview]


class CalculateAnswer(TypedDict, total=False):
    """`calculate` (agent/tools/calculate.py): the result, or the error that says why none."""

    expression: str
    result: float
    error: str


class Seen(TypedDict, total=False):
    """A section's answers, by tool, in the order they came."""

    simulation_analytics: list[Analytics]
    quick_search: list[SearchAnswer]
    panorama_search: list[PanoramaAnswer]
    insight_forge: list[InsightAnswer]
    agent_profile: list[ProfileAnswer]
    coalitions: list[CoalitionsAnswer]
    interview_agents: list[InterviewsAnswer]
    calculate: list[CalculateAnswer]


class ScheduledEvent(TypedDict, total=False):
    round: int
    description: str


class PlanningContext(TypedDict, total=False):
    """What `SimulationTools.context` gathers for planning (`ContextGathered`); a section's prompt shows part
    of it as the background (agent/checks/claims.py `background`)."""

    simulation_id: str
    generation: int
    requirement: str
    platforms: dict[str, dict[str, Any]]  # platform -> {"actions", "rounds", ...}
    total_actions: int
    rounds: int
    agents_count: int
    stances: dict[str, int]
    agent_types: dict[str, int]
    hot_topics: list[str]
    scheduled_events: list[ScheduledEvent]
    narrative_direction: str
    sample_posts: list[Statement]


def answered(seen: Seen) -> int:
    """How many answers `seen` holds: how many of its planned calls a section has made."""
    return sum(len(answers) for answers in cast(dict[str, list[Any]], seen).values())


def add_answer(seen: Seen, tool: str, answer: Any) -> None:
    """File a parsed answer under its tool (a name read from the conversation: any tool's, even one no
    writer reads)."""
    cast(dict[str, list[Any]], seen).setdefault(tool, []).append(answer)
