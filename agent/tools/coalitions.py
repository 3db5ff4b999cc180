"""Coalitions: agents held together by mutual follows and a shared stance, and the rounds they formed in.

Pure. Mutual follows are joined in the order they formed (the round the second of the two
follows came); two agents join when they speak for the same camp: their profile's stance, or
the camp a side-changer's statements moved to. A group is a coalition once it has `min_size`
members; mutual follows across camps are counted apart (the bridges between camps).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

MAX_COALITIONS = 20
MAX_MEMBERS = 12  # listed per coalition; `size` says how many it has
MAX_GROWTH = 10  # (round, size) steps listed per coalition


def coalitions_of(formed: dict[tuple[int, int], int], agents: dict[int, dict[str, Any]],
                  speaks_for: dict[int, str], min_size: int) -> dict[str, Any]:
    """The coalitions of a run from its mutual follows ({(a, b): round formed}) and its agents' stances."""
    camp = {i: speaks_for.get(i) or a["stance"] for i, a in agents.items()}
    groups = _Groups(min_size)
    bridges = 0
    for (a, b), round_no in sorted(formed.items(), key=lambda kv: (kv[1], kv[0])):
        if camp.get(a) and camp.get(a) == camp.get(b):
            groups.join(a, b, round_no)
        else:
            bridges += 1
    found = [_coalition(sorted(members), groups, agents, camp) for members in groups.members() if len(members) >= min_size]
    found.sort(key=lambda c: (-c["size"], c["formed_round"], c["members"][0]["ref"]))
    return {"coalitions": found[:MAX_COALITIONS], "coalitions_found": len(found), "min_size": min_size,
            "mutual_follows": len(formed), "cross_camp_mutual_follows": bridges,
            "agents_in_coalitions": sum(c["size"] for c in found)}


class _Groups:
    """Union-find over agents, remembering when each agent joined and when each group reached `min_size`."""

    def __init__(self, min_size: int) -> None:
        self.min_size = min_size
        self.parent: dict[int, int] = {}
        self.size: dict[int, int] = {}
        self.formed: dict[int, int] = {}  # root -> first round its group (or a part of it) had min_size members
        self.completed: dict[int, int] = {}  # root -> round of the group's last merge
        self.joined: dict[int, int] = {}  # agent -> round of its first mutual follow in its group

    def root(self, agent: int) -> int:
        while self.parent.setdefault(agent, agent) != agent:
            self.parent[agent] = self.parent[self.parent[agent]]  # path halving
            agent = self.parent[agent]
        return agent

    def join(self, a: int, b: int, round_no: int) -> None:
        for agent in (a, b):
            self.joined.setdefault(agent, round_no)
        ra, rb = self.root(a), self.root(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        self.size[ra] = self.size.get(ra, 1) + self.size.pop(rb, 1)
        earlier = [self.formed[r] for r in (ra, rb) if r in self.formed]
        self.formed.pop(rb, None)
        if earlier or self.size[ra] >= self.min_size:
            self.formed[ra] = min(earlier, default=round_no)
        self.completed[ra] = round_no

    def members(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for agent in self.parent:
            out.setdefault(self.root(agent), []).append(agent)
        return list(out.values())


def _coalition(group: list[int], groups: _Groups, agents: dict[int, dict[str, Any]],
               camp: dict[int, str]) -> dict[str, Any]:
    root = groups.root(group[0])
    joined = Counter(groups.joined[i] for i in group)
    growth, total = [], 0
    for round_no in sorted(joined):
        total += joined[round_no]
        growth.append({"round": round_no, "members": total})
    return {
        "camp": camp[group[0]], "size": len(group),
        "stance_mix": dict(sorted(Counter(agents[i]["stance"] for i in group).items())),
        "formed_round": groups.formed[root], "complete_round": groups.completed[root],
        "growth": growth[-MAX_GROWTH:],
        "members": [{"ref": f"agent:{i}", "name": agents[i]["name"], "stance": agents[i]["stance"]}
                    for i in group[:MAX_MEMBERS]],
    }
