"""Statements grouped by what they say, not by their exact wording (docs/architecture.md#meaning).

Pure numpy. How alike two statements are is read twice and blended: by their embeddings, centred on the
run's mean first (what every statement shares, the topic itself, is taken out, so "cameras in bedrooms"
and "false flags", both about proctoring, stay apart while "监考摄像头" meets "webcams"), and by the words
they share, weighted by how rare each word is in the run (paraphrases of one argument keep its telling
words). Wordings said more than once verbatim are arguments already and are never merged with each other;
statements said once may join them. Groups are then merged pairwise, closest first, by their average
likeness (average linkage) until no two groups are alike enough: the order of the input decides nothing.
What decorates a statement and says nothing of its argument (quotes of others, @mentions, #hashtags,
emojis) is left out first.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .embedders import Vectors, normalised

SAME_ARGUMENT = 0.08  # blended likeness at which two groups say the same thing (bench/analysis_quality.py)
MEANING_SHARE = 0.35  # of the blend, the embeddings' part; the rest is the shared rare words'
SAME_CAMP_ARGUMENT = 0.05  # blended likeness at which two groups one camp holds say the same thing
CAMP_HELD = 0.6  # of a group's authors, those of one stance that make it that camp's
SMALL_GROUP = 5  # statements a group holds at most to be joined to a larger one it is alike (`_small_joined`)
SMALL_JOINS = 0.03  # blended likeness from which such a group joins the larger one most like it
SAID_BY_MANY = 2  # a wording said this often is an argument already: two such never merge, others may join them
OFF_TOPIC_SHARE = 0.15  # of a run's wordings, the furthest in meaning from its requirement may be off its topic
HELD_BY = 0.7  # a group whose authors hold one stance this much is an argument, however far from the topic
UNDECIDED = frozenset({"neutral", "observer"})  # MiroFish's stances that argue no side (docs/formats.md#simulation-config)
CENTRE_FROM = 8  # statements a run needs before its mean is taken out (fewer: the mean is one of them)
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|^>.*$', re.M)
SENTENCE_END = re.compile(r"(?<=[.!?。！？…])\s*|\n+")
LETTERS = re.compile(r"[\u3400-\u9fff]|[^\W\d_\u3400-\u9fff]+", re.U)  # a Han character, or a run of other letters
SENTENCE_WORDS = 2  # words (Han characters) a sentence needs to be searched on its own: "cc", "+1." say nothing
HUB_NEIGHBOURS = 3  # nearest sentences whose mean likeness says how much a sentence is like everything
HUB_SAMPLE = 1000  # sentences a sentence is compared with to find that (evenly spread over the run)
DECORATION = re.compile(r"@\w+|#\w+|https?://\S+")
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+", re.U)
HAN = re.compile(r"[\u3400-\u9fff]")


def gist(text: str) -> str:
    """A statement without what does not carry its argument: others' words it quotes, @mentions, #hashtags,
    links, emojis (the text as it was, if nothing else is left)."""
    kept = DECORATION.sub(" ", QUOTED.sub(" ", text))
    kept = "".join(c for c in kept if unicodedata.category(c) not in ("So", "Sk", "Cs", "Co"))
    return " ".join(kept.split()) or text.strip()


def sentences(text: str) -> list[str]:
    """The sentences of a statement's gist worth searching on their own (the gist itself if none is)."""
    parts = [p.strip() for p in SENTENCE_END.split(text) if p and p.strip()]
    return [p for p in parts if len(LETTERS.findall(p)) >= SENTENCE_WORDS] or [text]


def hubness(vectors: Vectors, said: Sequence[int]) -> Vectors:
    """How alike each row is to its nearest others among the sentences as said (`said`: the row of each
    sentence said, so a line repeated across statements is near its own copies): a generic, short or
    stock sentence is near every question, in any language, and this is subtracted from its likeness to
    one, so that a detail said once is found by the question about it."""
    rows = np.asarray(said, dtype=int)
    if len(rows) > HUB_SAMPLE:
        rows = rows[np.linspace(0, len(rows) - 1, HUB_SAMPLE).astype(int)]
    k = min(HUB_NEIGHBOURS, max(len(rows) - 1, 1))
    out = np.zeros(len(vectors), dtype=np.float32)
    first = {int(r): i for i, r in reversed(list(enumerate(rows)))}
    for start in range(0, len(vectors), 1000):
        alike = vectors[start:start + 1000] @ vectors[rows].T
        for r in range(start, min(start + 1000, len(vectors))):
            if r in first:  # a sentence is not its own neighbour; its other copies are
                alike[r - start, first[r]] = -1.0
        out[start:start + 1000] = np.sort(alike, axis=1)[:, -k:].mean(axis=1)
    return out


def centred(vectors: Vectors) -> Vectors:
    """Unit vectors with the run's common direction taken out (unchanged for very few statements)."""
    if len(vectors) < CENTRE_FROM:
        return vectors
    return normalised(vectors - vectors.mean(axis=0, keepdims=True))


def terms(text: str) -> list[str]:
    """Words and word pairs (a Han character counts as a word), lower-cased."""
    words = [w for token in WORD.findall(text.lower()) for w in (HAN.findall(token) if HAN.search(token) else [token])]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def shared_words(texts: Sequence[str]) -> Vectors:
    """Unit TF-IDF rows over the terms found in at least two of `texts`."""
    docs = [Counter(terms(t)) for t in texts]
    df = Counter(term for d in docs for term in d)
    vocab = {term: i for i, term in enumerate(sorted(t for t, n in df.items() if n >= 2))}
    rows = np.zeros((len(texts), max(len(vocab), 1)), dtype=np.float32)
    for i, d in enumerate(docs):
        for term, n in d.items():
            if term in vocab:
                rows[i, vocab[term]] = (1 + np.log(n)) * np.log(len(texts) / df[term])
    return normalised(rows)


def likeness(vectors: Vectors, texts: Sequence[str]) -> np.ndarray:
    """How alike each two statements are: centred embeddings and shared rare words, blended."""
    words = shared_words(texts)
    x = centred(vectors)
    return np.asarray(MEANING_SHARE * (x @ x.T) + (1 - MEANING_SHARE) * (words @ words.T), dtype=np.float64)


def groups(vectors: Vectors, texts: Sequence[str], weights: Sequence[int], threshold: float = SAME_ARGUMENT,
           stances: Sequence[Counter[str]] | None = None) -> list[int]:
    """A group number per statement (rows of `vectors`, their `texts`): the index of the group's representative,
    the statement said most often (`weights`), then the one most like the rest of its group. With the stances
    of each statement's authors (`stances`), two groups one camp holds merge from SAME_CAMP_ARGUMENT on."""
    if len(texts) == 0:
        return []
    alike = likeness(vectors, texts)
    repeated = np.asarray(weights) >= SAID_BY_MANY
    apart = alike.copy()
    apart[np.ix_(repeated, repeated)] = -np.inf  # agents who repeat a sentence verbatim have named their argument
    label = _merged(apart.copy(), threshold, stances)
    if stances is not None:
        label = _merged_within_camps(apart, label, stances)
    return _by_representative(alike, _small_joined(apart, label), np.asarray(weights, dtype=np.float64))


def _small_joined(alike: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Each group of at most SMALL_GROUP statements joined to the larger group it is most alike (average
    likeness), from SMALL_JOINS on: a few replies or asides in other words are that argument's, not one of
    their own, and a larger group's camp is read from more authors."""
    members = {int(g): np.flatnonzero(label == g) for g in np.unique(label)}
    large = [g for g, m in members.items() if len(m) > SMALL_GROUP]
    out = label.copy()
    for m in (m for m in members.values() if len(m) <= SMALL_GROUP and large):
        alike_to = [alike[np.ix_(m, members[g])].mean() for g in large]
        if max(alike_to) >= SMALL_JOINS:
            out[m] = large[int(np.argmax(alike_to))]
    return out


def _merged(alike: np.ndarray, threshold: float, stances: Sequence[Counter[str]] | None = None) -> np.ndarray:
    """Average linkage: the two most alike groups merge while their mean likeness reaches `threshold`. With
    the stances of each statement's authors, two groups of more than SMALL_GROUP statements that different
    camps hold never merge: the news of a scandal and a camp's outcry over it share every topical word."""
    n = len(alike)
    np.fill_diagonal(alike, -np.inf)
    size, label = np.ones(n), np.arange(n)
    votes = [Counter(s) for s in stances] if stances is not None else None
    while n > 1:
        i, j = (int(k) for k in np.unravel_index(int(np.argmax(alike)), alike.shape))
        if alike[i, j] < threshold:
            break
        if votes is not None and min(size[i], size[j]) > SMALL_GROUP and _camps_differ(votes[i], votes[j]):
            alike[i, j] = alike[j, i] = -np.inf  # kept apart, and so is what either later takes in
            continue
        _join(alike, size, i, j)
        if votes is not None:
            votes[i] = votes[i] + votes[j]
        label[label == j] = i
    return label


def _camps_differ(a: Counter[str], b: Counter[str]) -> bool:
    """Whether two groups are each held by a camp (`_camp`), and not by the same one."""
    held = _camp(a), _camp(b)
    return None not in held and held[0] != held[1]


def _join(alike: np.ndarray, size: np.ndarray, i: int, j: int) -> None:
    """Group `j` merged into group `i` of the average-linkage matrix `alike` (rows and columns by group)."""
    alike[i, :] = (alike[i, :] * size[i] + alike[j, :] * size[j]) / (size[i] + size[j])
    alike[:, i] = alike[i, :]
    alike[i, i] = alike[j, :] = alike[:, j] = -np.inf
    size[i] += size[j]


def _merged_within_camps(alike: np.ndarray, label: np.ndarray, stances: Sequence[Counter[str]]) -> np.ndarray:
    """The groups merged on, closest first by average likeness, from SAME_CAMP_ARGUMENT on, where one stance
    holds CAMP_HELD of the authors of both: one camp's paraphrases of an argument are alike a little less
    than the argument's own core, and a camp's arguments are told apart by their words."""
    names = np.unique(label)
    member = (label[None, :] == names[:, None]).astype(np.float64)  # a row per group
    size = member.sum(axis=1)
    between = member @ np.maximum(alike, -1e9) @ member.T / np.outer(size, size)  # never-merged pairs stay far
    between[between < -1.0] = -np.inf
    np.fill_diagonal(between, -np.inf)
    votes = [sum((stances[int(i)] for i in np.flatnonzero(row)), Counter()) for row in member]
    camps = sorted({c for v in votes if (c := _camp(v)) is not None})
    camp = np.array([camps.index(c) if (c := _camp(v)) is not None else -1 for v in votes])
    while True:
        masked = np.where((camp[:, None] == camp[None, :]) & (camp[:, None] >= 0), between, -np.inf)
        i, j = (int(k) for k in np.unravel_index(int(np.argmax(masked)), masked.shape))
        if masked[i, j] < SAME_CAMP_ARGUMENT:
            break
        _join(between, size, i, j)
        votes[i] = votes[i] + votes[j]
        held = _camp(votes[i])
        camp[i], camp[j] = camps.index(held) if held in camps else -1, -1
        label[label == names[j]] = names[i]
    return label


def _camp(votes: Counter[str]) -> str | None:
    """The stance CAMP_HELD of a group's authors hold, if one does."""
    total = sum(votes.values())
    top = votes.most_common(1)
    return top[0][0] if top and top[0][1] >= CAMP_HELD * total else None


def _by_representative(alike: np.ndarray, label: np.ndarray, weights: np.ndarray) -> list[int]:
    out = np.empty(len(label), dtype=int)
    for g in np.unique(label):
        members = np.flatnonzero(label == g)
        closeness = alike[np.ix_(members, members)].mean(axis=1)
        best = max(range(len(members)), key=lambda i: (weights[members[i]], closeness[i], -members[i]))
        out[members] = members[best]
    return [int(v) for v in out]


def off_topic(vectors: Vectors, about: Vectors, label: Sequence[int], stances: Sequence[Counter[str]]) -> list[int]:
    """The wordings that take no side: among the OFF_TOPIC_SHARE of them furthest in meaning from `about` (the
    run's requirement), those in a group (`label`, from `groups`) no stance holds HELD_BY of, nor the undecided
    stances together, counting each wording's authors' stances (`stances`). A far group one camp holds is an
    argument put in other terms; one the undecided hold is their news or questions, which the camps read."""
    far = np.argsort(vectors @ about, kind="stable")[:int(len(vectors) * OFF_TOPIC_SHARE)]
    votes: dict[int, Counter[str]] = {}
    for i, g in enumerate(label):
        votes.setdefault(g, Counter()).update(stances[i])
    return sorted(int(i) for i in far if not _held(votes[label[i]]))


def _held(votes: Counter[str]) -> bool:
    """Whether one stance, or the undecided together, hold HELD_BY of a group's authors."""
    total = sum(votes.values())
    undecided = sum(n for stance, n in votes.items() if stance in UNDECIDED)
    return bool(votes) and max(votes.most_common(1)[0][1], undecided) >= HELD_BY * total
