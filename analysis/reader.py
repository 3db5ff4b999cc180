"""The analysis of what a run's agents wrote, by meaning: arguments grouped across wordings and languages,
and search that fuses keyword and vector rankings (docs/architecture.md#meaning).

It reads the simulation model (the wordings the fold kept per agent, the statements), embeds what it has
not yet embedded through the vector cache, and answers. Without an embedder, or when it fails, it answers
by exact wording and keywords alone and says so (`note`): a report never waits on, or fails for, vectors.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simreportd.errors import EmbeddingsUnavailable
from simreportd.projections import simulation_queries
from simreportd.projections.tallies import argument_key

from .embedders import Embedder
from .languages import SAME_QUESTIONS, language_of, means_of, moved, posts_language
from .meaning import HAN, LETTERS, gist, groups, hubness, off_topic, sentences
from .vectors import VectorCache, embedder_named

log = logging.getLogger("simreportd.analysis")

MIN_TEXTS = 60  # distinct wordings a run needs before they are grouped by meaning: fewer give the rarity of
# words and the run's mean direction too little to stand on (a 12-agent run merged unlike catalogue lines)
MAX_TEXTS = 1500  # distinct wordings a run's analysis embeds at most (each agent's most said first)
FUSION_K = 60  # reciprocal-rank fusion's constant: a rank-1 hit scores 1/61
KEYWORD_SHARE = 0.25  # a question's keyword ranking, weighed against its vector ranking (bench/analysis_quality.py)
QUESTION_WORDS = 4  # words from which a query is a question searched by meaning first
VECTOR_CANDIDATES = 200  # nearest wordings a search takes from the vector ranking
PAUSE_S = 60  # seconds searches go by keywords alone after the embedder failed one
NEAR_BEST = 0.05  # cosine below the closest wording past which a wording is not a match


@dataclass
class Wordings:
    """A run's distinct wordings chosen for embedding: their keys, texts, how often each was said, the
    citation ids of their statements, and their vectors (None without an embedder)."""

    keys: list[str]
    texts: list[str]
    weights: list[int]
    refs: list[list[str]]
    vectors: Any = None
    total: int = 0  # distinct wordings in the run, embedded or not
    note: str = ""
    embedder: str = ""
    meaning: dict[str, str] = field(default_factory=dict)
    off_topic: set[str] = field(default_factory=set)  # wordings that take no side (`meaning.off_topic`)
    parts: Any = None  # the vectors of the wordings' distinct sentences (`meaning.sentences`), searched one by one
    part_of: Any = None  # for each wording, the rows of `parts` its sentences are
    hubs: Any = None  # per row of `parts`, how alike it is to everything (`meaning.hubness`)
    language: str = "en"  # the language most wordings are in (`languages.posts_language`)


class Reader:
    """The analysis of one store's runs, with an embedder (or none) and the vectors it has cached."""

    def __init__(self, embedder: Embedder | None, cache: VectorCache | None = None, max_texts: int = MAX_TEXTS) -> None:
        self.embedder, self.max_texts = embedder, max_texts
        self._down_until = 0.0  # an embedder that failed a search is not asked again before then
        self._means: dict[str, Any] | None = None  # `languages.means_of`, found at the first question across languages
        self.cache = cache if cache is not None else VectorCache(None, embedder) if embedder else None

    def wordings(self, sayings: list[tuple[Any, ...]], about: str = "") -> Wordings:
        """The run's wordings (rows of `simulation_queries.sayings`), embedded and grouped by meaning, and
        those off the topic of `about` (the run's requirement) found."""
        chosen = _chosen(sayings, self.max_texts)
        w = Wordings([k for k, _ in chosen], [t for _, (t, _, _) in chosen], [n for _, (_, n, _) in chosen],
                     [r for _, (_, _, r) in chosen], total=len({row[1] for row in sayings}))
        if self.cache is None:  # embeddings off, as configured: `grouped_by.meaning` is None, nothing to explain
            return w
        w.embedder = self.cache.embedder.name
        try:
            w.vectors = self.cache.vectors([gist(t) for t in w.texts])
        except EmbeddingsUnavailable as exc:
            log.warning("%s; the analysis goes on by exact wording and keywords", exc)
            w.note = str(exc)
            return w
        self._split(w)
        w.language = posts_language(w.texts)
        if len(w.keys) >= MIN_TEXTS:
            labels = groups(w.vectors, [gist(t) for t in w.texts], w.weights, stances=_stances(w, sayings))
            w.meaning = {key: w.keys[label] for key, label in zip(w.keys, labels) if w.keys[label] != key}
            if about.strip():
                w.off_topic = self._off_topic(w, labels, sayings, about)
        if w.total > len(w.keys):
            w.note = f"{len(w.keys)} of {w.total} distinct wordings were compared by meaning (the most said first)"
        return w

    def _split(self, w: Wordings) -> None:
        """The wordings' sentences embedded, for search: a question about one detail meets the sentence that
        holds it, not the average of a paragraph. Without them, search compares whole wordings."""
        assert self.cache is not None
        index: dict[str, int] = {}
        w.part_of = [[index.setdefault(p, len(index)) for p in sentences(gist(t))] for t in w.texts]
        try:
            w.parts = self.cache.vectors(list(index))
        except EmbeddingsUnavailable as exc:
            log.warning("%s; searches compare whole statements", exc)
            w.parts = w.part_of = None
            return
        w.hubs = hubness(w.parts, [r for rows in w.part_of for r in rows])

    def _off_topic(self, w: Wordings, labels: list[int], sayings: list[tuple[Any, ...]], about: str) -> set[str]:
        """The keys of the wordings that take no side (`meaning.off_topic`); none when `about` cannot be
        embedded (the analysis then places every wording, as before it looked)."""
        assert self.cache is not None
        try:
            asked = self.cache.vectors([about], query=True)[0]
        except EmbeddingsUnavailable as exc:
            log.warning("%s; every statement is read as taking a side", exc)
            return set()
        return {w.keys[i] for i in off_topic(w.vectors, asked, labels, _stances(w, sayings))}

    def search(self, conn: sqlite3.Connection, key: tuple[str, int], query: str, limit: int,
               kinds: tuple[str, ...] | None, wordings: Wordings | None) -> list[dict[str, Any]]:
        """Keyword and vector rankings fused (reciprocal rank), so a question finds the statements that answer
        it in other words or another language; keywords alone without vectors. A question (`asked_in_words`),
        or a query in another language than most posts, is answered by meaning first, the keyword ranking
        weighing KEYWORD_SHARE of it: its shared words are mostly the topic's and function words, any one of
        which makes a keyword hit. A few words (a name, a term) keep the keyword hits, the closest in meaning
        first, and the vectors add at most half of the answer: a name asked for is not buried under its
        nearest strangers."""
        keyword = simulation_queries.search(conn, key, query, max(limit, 50), kinds)
        close = self._closeness(query, wordings) if wordings is not None and query.strip() else None
        if close is None or wordings is None:
            return keyword[:limit]
        if asked_in_words(query) or language_of(query) != wordings.language:
            best = _fused([_ranked(close, wordings, kinds), [h["ref"] for h in keyword]], [1.0, KEYWORD_SHARE])[:limit]
        else:
            best = _keywords_first(_by_meaning(keyword, close, wordings), _nearest(close, wordings, kinds, limit), limit)
        known = {h["ref"]: h for h in keyword}
        fetched = {p["ref"]: p for p in simulation_queries.posts_by_refs(conn, key, [r for r in best if r not in known])}
        return [hit for r in best if (hit := known.get(r) or fetched.get(r)) is not None]

    def _closeness(self, query: str, w: Wordings) -> Any:
        """How close each wording is to the query (`_closeness`), or None without vectors or when the
        embedder fails (told once, then searches go by keywords until the pause ends)."""
        if w.vectors is None or not len(w.keys) or self.cache is None or time.monotonic() < self._down_until:
            return None
        try:
            asked = self._asked(query, w.language)
        except EmbeddingsUnavailable as exc:
            self._down_until = time.monotonic() + PAUSE_S
            log.warning("%s; searches go by keywords for the next %d s", exc, PAUSE_S)
            return None
        return _closeness(w, asked)

    def _asked(self, query: str, posts: str) -> Any:
        """The query's vector, moved into the posts' language when it is asked in another one."""
        assert self.cache is not None
        asked = self.cache.vectors([query], query=True)[0]
        source = language_of(query)
        if source == posts:
            return asked
        if self._means is None:
            self._means = means_of(self.cache.vectors([*SAME_QUESTIONS["en"], *SAME_QUESTIONS["zh"]], query=True))
        return moved(asked, self._means, source, posts)


def asked_in_words(query: str) -> bool:
    """Whether a query is a question put in words (QUESTION_WORDS or more, two Han characters a word), not a
    name or a term."""
    letters = LETTERS.findall(query)
    han = sum(1 for t in letters if HAN.fullmatch(t))
    return len(letters) - han + han / 2 >= QUESTION_WORDS


def _fused(rankings: list[list[str]], weights: list[float]) -> list[str]:
    """Citation ids by their weighted reciprocal-rank score over `rankings`, best first (ties by id)."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, ref in enumerate(ranking):
            scores[ref] = scores.get(ref, 0.0) + weight / (FUSION_K + rank + 1)
    return sorted(scores, key=lambda r: (-scores[r], r))


def _keywords_first(keyword: list[dict[str, Any]], nearest: list[str], limit: int) -> list[str]:
    """The keyword hits and the nearest in meaning fused, the hits kept: the vectors add at most half of
    `limit`, and all of it when nothing matched the words."""
    known = {h["ref"] for h in keyword}
    ranked = _fused([[h["ref"] for h in keyword], nearest], [1.0, 1.0])
    room = limit if not keyword else max(1, limit // 2)
    added = set([r for r in ranked if r not in known][:room])
    best = [r for r in ranked if r in known or r in added]
    return (best + [r for r in ranked if r in known and r not in best])[:limit]


def _ranked(close: Any, w: Wordings, kinds: tuple[str, ...] | None) -> list[str]:
    """Citation ids of the statements of the VECTOR_CANDIDATES wordings closest (`close`), closest first."""
    order = np.argsort(-close, kind="stable")[:VECTOR_CANDIDATES]
    return _of_kinds([ref for i in order for ref in w.refs[int(i)]], kinds)


def _of_kinds(refs: list[str], kinds: tuple[str, ...] | None) -> list[str]:
    """`refs` without repeats, only posts and quotes when `kinds` leaves comments out."""
    wanted = {"post", "quote"} if kinds and "comment" not in kinds else None
    return list(dict.fromkeys(r for r in refs if wanted is None or r.startswith("post:")))


def _nearest(close: Any, w: Wordings, kinds: tuple[str, ...] | None, limit: int) -> list[str]:
    """Citation ids of the statements whose wordings are closest (`close`), closest first: at most `limit`
    wordings, none much further than the closest (a search for one thing is not a list of all)."""
    order = [i for i in np.argsort(-close, kind="stable")[:min(limit, VECTOR_CANDIDATES)] if close[i] >= close.max() - NEAR_BEST]
    return _of_kinds([ref for i in order for ref in w.refs[int(i)]], kinds)


def _by_meaning(hits: list[dict[str, Any]], close: Any, w: Wordings) -> list[dict[str, Any]]:
    """Keyword hits, the closest in meaning first (their wording's `close`); those of wordings not compared
    after them, in their keyword order."""
    index = {k: i for i, k in enumerate(w.keys)}
    rank = [float(close[i]) if (i := index.get(argument_key(h.get("content") or ""))) is not None else -np.inf for h in hits]
    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: -rank[i])]


def _stances(w: Wordings, sayings: list[tuple[Any, ...]]) -> list[Counter[str]]:
    """For each wording, the stated stances of the agents who said it (one vote an agent)."""
    stances: dict[str, Counter[str]] = {}
    for row in sayings:
        stances.setdefault(row[1], Counter())[row[3]] += 1
    return [stances.get(k, Counter()) for k in w.keys]


def _closeness(w: Wordings, asked: Any) -> Any:
    """How close each wording is to a question: its closest sentence, less how close that sentence is to
    everything (`meaning.hubness`); the whole wording's cosine when its sentences were not embedded."""
    if w.parts is None:
        return w.vectors @ asked
    near = w.parts @ asked - w.hubs
    return np.array([near[rows].max() for rows in w.part_of])


def _chosen(sayings: list[tuple[Any, ...]], limit: int) -> list[tuple[str, tuple[str, int, list[str]]]]:
    """At most `limit` wordings: first each agent's most said one, then the most said overall; with each its
    text, how often it was said and the ids of its first statements. The rows are read in a fixed order (the
    fold's table has none: a run folded in two goes has its rows elsewhere), so a replay ranks alike."""
    by_key: dict[str, tuple[str, int, list[str]]] = {}
    best_of_agent: dict[int, tuple[int, str]] = {}
    for agent, key, _, _, said, _, first_ref, _, text, _, last_ref, *_ in sorted(sayings, key=lambda r: (r[1], r[0])):
        was = by_key.get(key, (text or "", 0, []))
        by_key[key] = (was[0], was[1] + said, [*was[2], *dict.fromkeys([first_ref, last_ref])])
        if said > best_of_agent.get(agent, (0, ""))[0]:
            best_of_agent[agent] = (said, key)
    ranked = sorted(by_key, key=lambda k: (-by_key[k][1], k))
    first = list(dict.fromkeys(k for _, k in sorted(best_of_agent.values(), key=lambda v: (-v[0], v[1]))))
    picked = list(dict.fromkeys([*first[:limit], *ranked]))[:limit]
    return [(k, by_key[k]) for k in sorted(picked)]


def recorded_reader(results: list[str], cache_path: Path | None) -> Reader:
    """The analysis a report's recorded tool results name (`searched_by` of a search, `camps.grouped_by.meaning`
    of the analytics), for its replay: the same embedder, its vectors read from the store's cache, no server
    asked."""
    for result in results:
        try:
            value = json.loads(result)
            name = value.get("searched_by") or value.get("camps", {}).get("grouped_by", {}).get("meaning")
        except (ValueError, AttributeError):
            continue
        if name:
            embedder = embedder_named(name)
            return Reader(embedder, VectorCache(cache_path, embedder))
    return Reader(None)
