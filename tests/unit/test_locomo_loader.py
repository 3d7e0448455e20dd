"""bench/locomo.py reads both layouts a grader may hold: a folder of one-conversation files
(the shared half) and the upstream ``locomo10.json`` (a list of samples), choosing samples
by id, so the held-out half can be measured by whoever has it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import _locomo_data

SHARED = Path(__file__).resolve().parents[3] / "shared/data/locomo"


def _upstream(folder: Path, out: Path) -> Path:
    """A locomo10.json-shaped file of the folder's conversations: each nested under
    ``conversation`` with its ``qa`` (and the summaries the release also carries) beside."""
    samples = []
    for file in sorted(folder.glob("*.json")):
        data = json.loads(file.read_text())
        qa = data.pop("qa")
        samples.append({"sample_id": f"conv-{file.stem}", "conversation": data, "qa": qa,
                        "event_summary": {}, "observation": {}, "session_summary": {}})  # fmt: skip
    path = out / "locomo10.json"
    path.write_text(json.dumps(samples))
    return path


def _sample(speakers: tuple[str, str], qa: list[dict]) -> dict:
    return {
        "speaker_a": speakers[0],
        "speaker_b": speakers[1],
        "session_2_date_time": "9:05 am on 3 June, 2024",
        "session_2": [{"speaker": speakers[1], "dia_id": "D2:1", "text": "later"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": speakers[0], "dia_id": "D1:1", "text": "hello"},
            {"speaker": speakers[1], "dia_id": "D1:2", "text": "hi", "blip_caption": "x"},
        ],
        "qa": qa,
    }


def test_a_synthetic_release_file_reads_like_its_folder(tmp_path) -> None:
    folder = tmp_path / "one-each"
    folder.mkdir()
    qa = [
        {"question": "q1", "answer": "a", "evidence": ["D1:2"], "category": 2},
        {"question": "q2", "answer": "a", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "q5", "adversarial_answer": "a", "evidence": ["D1:1"], "category": 5},
        {"question": "q9", "answer": "a", "evidence": ["D7:7"], "category": 4},
    ]
    (folder / "7.json").write_text(json.dumps(_sample(("Ann", "Bo"), qa)))
    (folder / "8.json").write_text(json.dumps(_sample(("Cy", "Di"), qa[:1])))
    (folder / "notes.md").write_text("not a sample")
    release = _upstream(folder, tmp_path)

    by_file = _locomo_data.load(folder)
    upstream = _locomo_data.load(release)
    assert [c["name"] for c in by_file] == ["7", "8"]
    assert [c["name"] for c in upstream] == ["conv-7", "conv-8"]
    for a, b in zip(by_file, upstream, strict=True):
        assert (a["turns"], a["questions"]) == (b["turns"], b["questions"])
    seven = by_file[0]
    # sessions in number order, speaker A the user, a minute apart within a session
    assert [(t[0], t[1], t[2]) for t in seven["turns"]] == [
        ("D1:1", True, "Ann: hello"), ("D1:2", False, "Bo: hi"), ("D2:1", False, "Bo: later"),
    ]  # fmt: skip
    assert (seven["turns"][1][3] - seven["turns"][0][3]).total_seconds() == 60
    # category 5 and evidence naming no turn are left out; "D1:1; D2:1" is two turns
    assert seven["questions"] == [("q1", {"D1:2"}), ("q2", {"D1:1", "D2:1"})]

    assert [c["name"] for c in _locomo_data.load(release, only={"conv-8"})] == ["conv-8"]
    assert [c["name"] for c in _locomo_data.load(release, skip={"conv-8"})] == ["conv-7"]
    assert [c["name"] for c in _locomo_data.load(folder, skip={"7"})] == ["8"]
    with pytest.raises(_locomo_data.LocomoError, match="conv-99"):
        _locomo_data.load(release, only={"conv-99"})


@pytest.mark.parametrize("bad", [{"x": 1}, [1], [{"sample_id": "s", "conversation": []}]])
def test_a_file_that_is_not_locomo_is_refused_with_its_name(tmp_path, bad) -> None:
    (tmp_path / "odd.json").write_text(json.dumps(bad))
    with pytest.raises(_locomo_data.LocomoError, match=r"odd\.json"):
        _locomo_data.load(tmp_path)


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared LoCoMo half is not here")
def test_the_shared_half_reads_the_same_from_a_release_shaped_file(tmp_path) -> None:
    by_file = _locomo_data.load(SHARED)
    upstream = _locomo_data.load(_upstream(SHARED, tmp_path))
    assert len(by_file) == 5 and sum(len(c["questions"]) for c in by_file) == 760
    assert [f"conv-{c['name']}" for c in by_file] == [c["name"] for c in upstream]
    for a, b in zip(by_file, upstream, strict=True):
        assert (a["turns"], a["questions"]) == (b["turns"], b["questions"])
    held_out = _locomo_data.load(_upstream(SHARED, tmp_path), skip={"conv-26", "conv-30"})
    assert [c["name"] for c in held_out] == ["conv-41", "conv-42", "conv-43"]
