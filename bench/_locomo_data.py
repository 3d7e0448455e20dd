"""bench/locomo.py's reader: LoCoMo conversations from either layout a grader may hold.

* a folder of one-conversation files, each the sample's ``conversation`` object with its
  ``qa`` beside it (``../shared/data/locomo/26.json``; the sample id is the file's stem
  unless the file names one);
* the upstream release's single file ``locomo10.json`` (snap-research/locomo, ``data/``): a
  JSON list of samples ``{sample_id, conversation: {speaker_a, speaker_b,
  session_N_date_time, session_N, ...}, qa, ...}`` — given as the path, or found in the
  folder.

``only`` and ``skip`` choose samples by id (``conv-26``, or a file's stem), so a held-out
half can be measured on its own. Nothing here knows a sample's names or wording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from datetime import datetime, timedelta
from pathlib import Path

CATEGORIES = (1, 2, 3, 4)  # 5 is adversarial: no turn answers it
_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")


class LocomoError(ValueError):
    """A file that is not LoCoMo-shaped, or a chosen sample id that is not there."""


def load(path: Path, *, only: Collection[str] = (), skip: Collection[str] = ()) -> list[dict]:
    """Each chosen conversation: ``name`` (its sample id), ``turns`` (dia_id, from speaker
    A?, "speaker: text", time) and ``questions`` (text, the evidence dia_ids it has)."""
    samples = list(_samples(path))
    known = {name for name, _ in samples}
    missing = set(only) - known
    if missing:
        raise LocomoError(f"no sample {', '.join(sorted(missing))} in {path}")
    chosen = [(n, c, qa) for n, (c, qa) in samples if (not only or n in only) and n not in skip]
    return [conversation(name, conv, qa) for name, conv, qa in chosen]


def _samples(path: Path) -> Iterator[tuple[str, tuple[dict, list]]]:
    files = [path] if path.is_file() else sorted(path.glob("*.json"))
    if not files:
        raise LocomoError(f"no .json file at {path}")
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        for i, sample in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(sample, dict):
                raise LocomoError(f"{file.name}: item {i} is not an object")
            conv = sample.get("conversation", sample)  # upstream nests it; ours is flat
            name = sample.get("sample_id") or (file.stem if not isinstance(data, list) else "")
            if not name or not isinstance(conv, dict) or "speaker_a" not in conv:
                raise LocomoError(f"{file.name}: item {i} is not a LoCoMo sample")
            yield str(name), (conv, sample.get("qa", []))


def conversation(name: str, data: dict, qa: list) -> dict:
    """One sample's turns in order (a minute apart within a session) and its questions of
    categories 1-4 whose evidence names turns it has."""
    sessions = sorted(int(m.group(1)) for k in data if (m := _SESSION.fullmatch(k)))
    turns = []
    for n in sessions:
        start = datetime.strptime(data[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for i, turn in enumerate(data[f"session_{n}"]):
            when = (start + timedelta(minutes=i)).astimezone()
            user = turn["speaker"] == data["speaker_a"]
            turns.append((turn["dia_id"], user, f"{turn['speaker']}: {turn['text']}", when))
    ids = {t[0] for t in turns}
    questions = []
    for item in qa:
        evidence = {e for ref in item.get("evidence", []) for e in _DIA_ID.findall(ref)}
        if item.get("category") in CATEGORIES and evidence & ids:
            questions.append((item["question"], evidence & ids))
    return {"name": name, "turns": turns, "questions": questions}
