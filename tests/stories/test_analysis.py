"""The analysis by meaning (analysis/): groups across wordings and languages, hybrid search's vector half,
and an embedder that fails leaving keyword analysis standing."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from simreportd.agent.tools.camps import camps_from_sayings, statement_stances
from simreportd.analysis import Reader, VectorCache, embedder_from, meaning
from simreportd.analysis.embedders import BundledE5
from simreportd.analysis.meaning import gist, groups, hubness, off_topic, sentences
from simreportd.analysis.reader import KEYWORD_SHARE, _fused, _keywords_first, asked_in_words
from simreportd.analysis.vectors import CachedOnly
from simreportd.errors import EmbeddingsUnavailable
from simreportd.simulator.simulate import simulate

from ..conftest import PYTHON, TIMEOUT, WITH_EMBEDDINGS, send_json, write_config

CAMERAS = ["A camera in my bedroom for hours every week is surveillance, plain and simple.",
           "Webcams on in our own bedrooms for hours? That is surveillance of students.",
           "监考摄像头每周在卧室里开好几个小时，这就是监视。"]
STRESS = ["Exam season wrecks people; spreading assessment out over the term is kinder.",
          "Finals wreck people every year. Spread the assessment out, it is kinder.",
          "The exam hall in finals week breaks people. Coursework spreads the stress out."]
CHATTER = ["Lunch was leftover curry today, zero regrets.", "Anyone know a decent barber near the station?"]


def test_paraphrases_group_together_and_apart_from_other_arguments() -> None:
    texts = CAMERAS + STRESS + CHATTER + [t.replace("kinder", "kinder #UniLife 😩") for t in STRESS]
    labels = groups(BundledE5().embed([gist(t) for t in texts]), [gist(t) for t in texts], [1] * len(texts))
    assert len({labels[i] for i in (3, 4, 8, 9)}) == 1  # one argument, with or without decorations
    assert labels[0] == labels[1] and labels[0] != labels[3]  # cameras are not stress


def test_wordings_said_often_are_never_merged_with_each_other() -> None:
    texts = STRESS[:2]
    vectors = BundledE5().embed(texts)
    assert len(set(groups(vectors, texts, [1, 1]))) == 1
    assert len(set(groups(vectors, texts, [5, 4]))) == 2  # each repeated verbatim: each an argument already


def test_gist_leaves_out_quotes_mentions_hashtags_and_emojis() -> None:
    said = '"nobody audited this…" says @dmitri_okafor8. Exactly. Webcams on at home. #NoSpyCams 😬'
    assert gist(said) == "says . Exactly. Webcams on at home."
    assert gist("😬🔥") == "😬🔥"  # nothing else left: the text as it was


def test_a_question_in_words_is_searched_by_meaning_first_and_a_name_by_its_keywords() -> None:
    assert asked_in_words("Did anyone's spectacles confuse the software?") and asked_in_words("谁的帖子最受关注？")
    assert not asked_in_words("stadium memo") and not asked_in_words("垃圾收费") and not asked_in_words("Lindqvist")
    vector, keyword = ["post:twitter:1", "post:twitter:2", "post:twitter:3"], ["post:twitter:3", "post:twitter:9"]
    fused = _fused([vector, keyword], [1.0, KEYWORD_SHARE])  # both find 3 first; the keywords alone: last
    assert fused == ["post:twitter:3", "post:twitter:1", "post:twitter:2", "post:twitter:9"]
    hits = [{"ref": r} for r in keyword]
    assert _keywords_first(hits, vector, 3) == ["post:twitter:3", "post:twitter:1", "post:twitter:9"]  # 9 kept


def test_a_chinese_question_finds_the_posts_that_answer_it_in_both_languages(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "vectors.sqlite3", BundledE5())
    passages = cache.vectors(CAMERAS + STRESS + CHATTER)
    asked = cache.vectors(["谁认为监考摄像头侵犯隐私？"], query=True)[0]
    assert set(np.argsort(-(passages @ asked))[:2].tolist()) == {1, 2}  # the Chinese post, then an English one
    again = VectorCache(tmp_path / "vectors.sqlite3", CachedOnly(BundledE5.name))  # a miss would fail
    assert np.array_equal(again.vectors(CAMERAS), passages[:3])  # read back from the cache file


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_is_down_is_named_and_the_analysis_goes_on_by_wording(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    served = embedder_from("openai", url, "e5-small", timeout_s=2)
    assert served is not None
    with pytest.raises(EmbeddingsUnavailable, match=rf"{url}.*e5-small"):
        served.embed(["anything"])
    reader = Reader(served, VectorCache(tmp_path / "v.sqlite3", served))
    row = (1, "a camera in my bedroom", "Ana", "opposing", 1, 1, "post:twitter:1", 1, CAMERAS[0], 1,
           "post:twitter:1", 1, 1, 1, "post:twitter:1", 1, CAMERAS[0])
    wordings = reader.wordings([row])
    assert wordings.meaning == {} and url in wordings.note and wordings.vectors is None


def test_hostile_statements_embed_as_any_other() -> None:
    hostile = ["", "😬🔥💀", "<script>alert(1)</script><b>fees</b>", "fees " * 20_000, "收费 fees плата", "\x00x", "\ud800x"]
    vectors = BundledE5().embed(hostile)
    assert vectors.shape == (len(hostile), 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)


class Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings server whose second answer has another dimension."""

    answered = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        size = 8 if Embeddings.answered == 0 else 6
        Embeddings.answered += 1
        send_json(self, {"object": "list", "model": "m", "data": [
            {"object": "embedding", "index": i, "embedding": [1.0] * size} for i in range(len(texts))]})

    def log_message(self, *args: object) -> None:
        pass


def test_a_server_that_changes_its_dimension_is_refused_by_name() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        served = embedder_from("openai", url, "tiny-e5", timeout_s=5)
        assert served is not None and served.embed(["a", "b"]).shape == (2, 8)
        with pytest.raises(EmbeddingsUnavailable, match=r"tiny-e5.*dimensions \[6\].*expected 8"):
            served.embed(["c"])
    finally:
        server.shutdown()


def test_the_wordings_do_not_depend_on_the_order_the_fold_left_its_rows_in(tmp_path: Path) -> None:
    texts = CAMERAS + STRESS + CHATTER
    rows = [(agent, text.lower(), f"A{agent}", "opposing", 1, 1, f"post:twitter:{i}{agent}", i, text, 2,
             f"post:twitter:{i + 100}{agent}", i + 100, 1, 1, f"post:twitter:{i}{agent}", i, text)
            for i, text in enumerate(texts) for agent in (i % 3, 7)]
    reader = Reader(BundledE5(), VectorCache(tmp_path / "v.sqlite3", BundledE5()))
    first, second = reader.wordings(rows), reader.wordings(rows[::-1])
    assert (first.keys, first.texts, first.refs, first.weights) == (second.keys, second.texts, second.refs, second.weights)


def test_a_report_whose_embedder_is_down_completes_by_wording_and_says_why(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    config = write_config(tmp_path, f'[embeddings]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "e5-small"\n'
                                    "timeout_s = 2\n", auto=False)
    simulate(tmp_path / "sims" / "sim_down", agents=12, rounds=6, seed=2, style="llm")
    done = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(config), "report", str(tmp_path / "sims" / "sim_down"),
                           "--wait"], capture_output=True, text=True, timeout=TIMEOUT * 2, env=WITH_EMBEDDINGS)
    assert done.returncode == 0, done.stderr
    report = next((tmp_path / "reports").glob("*/full_report.md")).read_text(encoding="utf-8")
    assert url in report and "e5-small" in report  # the report says why it read by wording, naming the server
    assert json.loads(next((tmp_path / "reports").glob("*/meta.json")).read_text())["status"] == "completed"


class Counting:
    """A real embedder's shape at no cost: a unit vector per text, from its length."""

    name = "counting"

    def embed(self, texts: list[str], query: bool = False) -> np.ndarray:
        return np.asarray([[1.0, float(len(t))] / np.hypot(1.0, len(t)) for t in texts], dtype=np.float32)


def test_the_vector_cache_drops_its_oldest_past_its_limit_in_one_line(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    cache = VectorCache(tmp_path / "v.sqlite3", Counting(), max_vectors=100)
    cache.vectors([f"text {'x' * n}" for n in range(100)])
    assert not caplog.records
    cache.vectors([f"new {'x' * n}" for n in range(20)])  # 120 held: down to 90
    [line] = [r for r in caplog.records if "cache_max_vectors" in r.getMessage()]
    assert "120 vectors" in line.getMessage() and "30 oldest" in line.getMessage()
    again = VectorCache(tmp_path / "v.sqlite3", CachedOnly("counting"))
    assert len(again.vectors([f"new {'x' * n}" for n in range(20)])) == 20  # the newest are kept
    with pytest.raises(EmbeddingsUnavailable):
        again.vectors(["text "])  # the first cached is gone


def test_far_talk_no_camp_holds_takes_no_side_and_a_far_argument_one_camp_holds_keeps_it() -> None:
    about = np.asarray([1.0, 0.0], dtype=np.float32)
    near, far = [0.9, 0.44], [0.1, 0.99]
    vectors = np.asarray([near] * 16 + [far] * 4, dtype=np.float32)
    label = [0] * 16 + [16, 16, 18, 18]  # two far groups: chatter, and an argument of the opposing camp
    stances = [Counter({"supportive": 1})] * 16 + [Counter({"supportive": 1}), Counter({"opposing": 1}),
                                                   Counter({"opposing": 1}), Counter({"opposing": 1})]
    assert off_topic(vectors, about, label, stances) == [16, 17]  # 15% of 20: the three furthest looked at
    news = stances[:16] + [Counter({"neutral": 1}), Counter({"observer": 1})] + stances[18:]
    assert off_topic(vectors, about, label, news) == []  # what the undecided pass on is read by the camps
    row = lambda agent, key, stance, rnd: (agent, key, f"A{agent}", stance, 1, rnd, f"post:twitter:{agent}{rnd}",  # noqa: E731
                                           rnd, key, rnd, f"post:twitter:{agent}{rnd}", rnd, 1, rnd,
                                           f"post:twitter:{agent}{rnd}", rnd, key)
    rows = [row(1, "soup again", "opposing", 1), row(2, "soup again", "opposing", 2), row(3, "soup again", "opposing", 3),
            row(1, "charge is fair", "supportive", 4)]
    assert "opposing" in camps_from_sayings(rows)["arguments"]
    camps = camps_from_sayings(rows, off_topic={"soup again"})
    assert "opposing" not in camps["arguments"] and statement_stances(rows, off_topic={"soup again"})[(1, "soup again")] == ""


CHARGE = ["The congestion charge is a tax on people who have no train to take. Scrap it.",
          "Twelve pounds a day to drive to work? Families on the edge cannot pay that.",
          "Cleaner air for the kids on Market Street is worth a small charge, honestly.",
          "The buses got faster during the trial. Keep the charge and fund more routes.",
          "Who decided the boundary? My street is split in half by the zone.",
          "Shops in the centre will die if nobody can afford to drive in. Small businesses are already struggling.",
          "Honestly the charge is killing the high street and nobody on the council cares. Talked to the owner of "
          "Rosie's Bakery yesterday, she says weekend takings fell by a third. Shops in the centre can't take "
          "another year of this. #ScrapTheCharge",
          "Ambulances got through town quicker in the trial week, the paramedics said so.",
          "Anyone else get soaked on the way in this morning? Umbrella broke twice.",
          "Fix the potholes first, then talk to us about charging drivers.",
          "The cafe by the station has lost its lunchtime regulars since the charge came in, I'm told."]


def charge_rows() -> list[tuple[object, ...]]:
    """Rows as `simulation_queries.sayings` gives them: one agent a statement, each said once."""
    return [(i, text.lower(), f"A{i}", "opposing" if i % 2 else "supportive", 1, 1, f"post:twitter:{i}", i, text, 1,
             f"post:twitter:{i}", i, 1, 1, f"post:twitter:{i}", i, text) for i, text in enumerate(CHARGE)]


def test_a_question_in_another_language_finds_the_detail_one_sentence_of_a_post_holds(tmp_path: Path) -> None:
    reader = Reader(BundledE5(), VectorCache(tmp_path / "v.sqlite3", BundledE5()))
    w = reader.wordings(charge_rows())
    assert w.language == "en" and w.parts is not None and len(w.parts) > len(CHARGE)  # searched sentence by sentence
    bakery = w.refs.index(["post:twitter:6"])
    for question in ("哪家面包店说收费以后生意变差了？", "Which bakery said the charge cost it customers?"):
        assert int(np.argmax(reader._closeness(question, w))) == bakery, question  # second unless moved across


def test_a_sentence_said_in_many_statements_is_near_everything_and_discounted() -> None:
    vectors = np.eye(3, dtype=np.float32)
    hubs = hubness(vectors, [0, 0, 0, 1, 2])  # sentence 0 said three times: near its own copies
    assert hubs[0] > hubs[1] == hubs[2]


def test_sentences_worth_searching_leave_out_what_says_nothing() -> None:
    assert sentences("cc. I got flagged for reading aloud! +1.") == ["I got flagged for reading aloud!"]
    assert sentences("视频里的清运车把四个桶倒进了一个车斗。好。") == ["视频里的清运车把四个桶倒进了一个车斗。"]
    assert sentences("+1") == ["+1"]  # nothing else: the text as it was


def test_groups_one_camp_holds_merge_and_a_small_group_joins_the_larger_it_is_like() -> None:
    alike = np.full((8, 8), 0.0)
    alike[:2, :2] = alike[2:4, 2:4] = 0.5
    alike[:2, 2:4] = alike[2:4, :2] = 0.06  # below SAME_ARGUMENT, above SAME_CAMP_ARGUMENT
    label = np.array([0, 0, 2, 2, 4, 5, 6, 7])
    one_camp = [Counter({"opposing": 1})] * 4 + [Counter()] * 4
    assert len(set(meaning._merged_within_camps(alike, label.copy(), one_camp)[:4])) == 1
    two_camps = [Counter({"opposing": 1})] * 2 + [Counter({"supportive": 1})] * 2 + [Counter()] * 4
    assert len(set(meaning._merged_within_camps(alike, label.copy(), two_camps)[:4])) == 2
    big = np.full((8, 8), 0.2)
    big[7, :7] = big[:7, 7] = 0.04  # one aside, a little like the argument of seven
    joined = meaning._small_joined(big, np.array([0] * 7 + [7]))
    assert set(joined) == {0}
    assert set(meaning._small_joined(big * 0.5, np.array([0] * 7 + [7]))) == {0, 7}  # too unlike: its own


def test_two_large_groups_different_camps_hold_never_merge_however_alike() -> None:
    alike = np.full((12, 12), 0.2)  # alike enough to merge (0.08), each six more alike among themselves
    alike[:6, :6] = alike[6:, 6:] = 0.5
    opposed = [Counter({"opposing": 1})] * 6 + [Counter({"observer": 1})] * 6
    assert len(set(meaning._merged(alike.copy(), 0.08, opposed))) == 2
    assert len(set(meaning._merged(alike.copy(), 0.08, [Counter({"opposing": 1})] * 12))) == 1
    assert len(set(meaning._merged(alike.copy(), 0.08))) == 1  # no stances known: by likeness alone
