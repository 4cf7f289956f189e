"""How `sim/learner` finds a rule in a group of cases: features shared by the group, rare elsewhere.

A task is read as "Field: value" lines (the way a language model reads a form). A task's
features are

- the words of each field's value ("Customer" mentions "wholesale"), except stop words, words
  with digits and the answers' own names (an answer's name is no clue to it);
- a code's first letter ("Order: Z-10442": the Order starts with "Z");
- for a field that is a number in every case, a threshold: the roundest number between the
  group's values and the other cases' values on one side ("Total" above $2,000); "roundest" =
  fewest significant digits, nearest the middle of the gap (the widest margin).

A feature scores (share of the group's cases that have it) - (share of the prompt's other
cases that have it); it counts when two cases of the group or more have it and it scores at
least MIN_SCORE. The rule names the best-scoring features (ties: all, up to MAX_CLUES, in the
order the task shows them). Nothing here knows any task's rules: only this procedure, English
stop words and the US state abbreviations any language model knows.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

MIN_SCORE = 0.5
MAX_CLUES = 3
STOP = frozenset("""a about after again all also am an and any are as at back be because been before being but
by can could did do does for from get got had has have having he her here him his how if in into is it its just me
more my no not now of off on one only or other our out over please same she so some still than that the their
them then there these they this those to too up us very was we were what when where which while who why will with
would yes yet you your none nothing n/a hi hello dear thanks thank regards cheers x""".split())
STATES = dict(zip(
    "AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK "
    "OR PA RI SC SD TN TX UT VT VA WA WV WI WY".split(),
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|District of Columbia|Florida|Georgia|"
    "Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|"
    "Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|North Carolina|"
    "North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|Tennessee|Texas|Utah|"
    "Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming".split("|")))
_CLIPPED = re.compile(r"\s*\[\.\.\. \d+ chars clipped \.\.\.\]\s*")
_FIELD = re.compile(r"^([A-Z][A-Za-z ]{0,20}): (.+)$")
_CODE = re.compile(r"^[A-Za-z]{1,3}-?\d{3,}$")
_NUMBER = re.compile(r"^\$?(\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'/-]*")


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts: the learner's only randomness."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:13], 16) / 16 ** 13


def line_tokens(line: str) -> list[str]:
    """Lower-case words and numbers of a line ("$2,500" -> "2500")."""
    return re.findall(r"[a-z0-9]+", re.sub(r"(?<=\d),(?=\d{3}\b)", "", line.lower()))


@dataclass(frozen=True)
class Case:
    fields: tuple[tuple[str, str], ...]  # ("Order", "Z-10442"), in the task's order
    expected: str = ""
    output: str = ""


@dataclass(frozen=True)
class Rule:
    label: str
    condition: str  # 'the Order line starts with "Z" or the Total line is above $2,000'
    tokens: frozenset[str] = field(default_factory=frozenset)  # its clue words, to find skill lines about it
    support: int = 0

    def text(self) -> str:
        return f"- If {self.condition}, answer {self.label}."


def _fields(text: str, keys: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    text = _CLIPPED.sub(" ", text)
    if keys and "\n" not in text.strip():  # a one-line task (a contrast): split at the known field names
        parts = re.split(r"(?:^|\s)(" + "|".join(map(re.escape, keys)) + r"): ", text.strip())
        return tuple((k, v.strip()) for k, v in zip(parts[1::2], parts[2::2]))
    found = (_FIELD.match(line.strip()) for line in text.splitlines())
    return tuple(dict((m.group(1), m.group(2).strip()) for m in found if m).items())


def read_cases(text: str) -> tuple[list[Case], list[Case]]:
    """(cases, contrasts) of a prompt's case listing: "--- case N ---" blocks and "Contrast:" lines."""
    cases = []
    for block in re.split(r"^--- case \d+[^\n]*---$", text, flags=re.M)[1:]:
        task = block.split("\nOutput:", 1)[0].replace("Task:\n", "", 1)
        found = [re.search(rf"^{key}: (.*)$", block, re.M) for key in ("Expected", "Output")]
        expected, output = (m.group(1).strip().lower() if m else "" for m in found)
        cases.append(Case(_fields(task), expected, output))
    keys = list(dict.fromkeys(k for c in cases for k, _ in c.fields))
    contrasts = [Case(_fields(m.group(2), keys), m.group(1).strip().lower())
                 for m in re.finditer(r'^Contrast: this task rightly got "(.*?)": (.*)$', text, re.M)]
    return cases, contrasts


def read_labels(user: str, cases: Iterable[Case]) -> frozenset[str]:
    """The answers: those the cases name, and every item of a list line that holds two of them."""
    seen = {a for c in cases for a in (c.expected, c.output) if a}
    out = set(seen)
    for m in re.finditer(r"^[A-Z][A-Za-z ]{0,20}: (.+)$", user, re.M):
        items = {i.strip(" .").lower() for i in m.group(1).split(",")}
        if len(items) > 2 and len(items & seen) >= 2:
            out |= items
    return frozenset(out)


def _features(case: Case, labels: frozenset[str]) -> dict[tuple, str]:
    """feature key -> how a rule names it."""
    out: dict[tuple, str] = {}
    for name, value in case.fields:
        if _CODE.match(value):
            out[("starts", name, value[0].upper())] = f'the {name} line starts with "{value[0].upper()}"'
        for word in _WORD.findall(value):
            shown = word.strip("'-/")
            if len(shown) > 3 and shown[-1] in "sS" and shown[-2] not in "sS":
                shown = shown[:-1]  # a plural names the same thing: "chargebacks" is "chargeback"
            low = shown.lower()
            if len(low) < 2 or low in STOP or low in labels or any(ch.isdigit() for ch in low):
                continue
            shown = f'"{shown}" ({STATES[shown]})' if shown in STATES else f'"{shown}"'
            out.setdefault(("word", name, low), shown)
    return out


def _number(case: Case, name: str) -> float | None:
    m = _NUMBER.match(dict(case.fields).get(name, "").strip())
    return float(m.group(0).lstrip("$").replace(",", "")) if m else None


def _roundest(lo: float, hi: float) -> float | None:
    """The number strictly between lo and hi with the fewest significant digits (nearest the middle)."""
    for k in range(9, -1, -1):
        step = 10 ** k
        first, last = math.floor(lo / step) + 1, math.ceil(hi / step) - 1
        if first <= last:
            return min(max(round((lo + hi) / 2 / step), first), last) * step
    return None


def _thresholds(group: Sequence[Case], others: Sequence[Case]) -> dict[tuple, tuple[float, str]]:
    """feature key -> (score, wording) of "above" / "below" thresholds of the numeric fields."""
    out: dict[tuple, tuple[float, str]] = {}
    for name, value in group[0].fields:
        values = [_number(c, name) for c in group]
        other = [v for c in others if (v := _number(c, name)) is not None]
        if any(v is None for v in values) or not other:
            continue
        money = "$" if value.strip().startswith("$") else ""
        lower = [v for v in other if v < min(values)]
        t = _roundest(max(lower), min(values)) if lower else None
        if t is not None:
            out[("above", name, t)] = (1 - sum(v > t for v in other) / len(other),
                                       f"the {name} line is above {money}{t:,.0f}")
        higher = [v for v in other if v > max(values)]
        t = _roundest(max(values), min(higher)) if higher else None
        if t is not None:
            out[("below", name, t)] = (1 - sum(v < t for v in other) / len(other),
                                       f"the {name} line is below {money}{t:,.0f}")
    return out


def _condition(chosen: Sequence[tuple], wording: dict[tuple, str]) -> str:
    """The chosen features in words: one field's words joined ('mentions "PO" or "Box"')."""
    parts: list[str] = []
    words: dict[str, list[str]] = {}
    for key in chosen:
        if key[0] == "word":
            if key[1] not in words:
                words[key[1]] = []
                parts.append(f"\x00{key[1]}")
            words[key[1]].append(wording[key])
        else:
            parts.append(wording[key])
    return " or ".join(f"the {p[1:]} line mentions {' or '.join(words[p[1:]])}" if p.startswith("\x00") else p
                       for p in parts)


def find_rule(group: Sequence[Case], others: Sequence[Case], labels: frozenset[str]) -> Rule | None:
    """The rule a group of cases with one expected answer suggests, or None (no shared clue)."""
    if len(group) < 2:
        return None  # one case shows no pattern
    feats = [_features(c, labels) for c in group]
    inside = Counter(k for f in feats for k in f)
    outside = Counter(k for c in others for k in _features(c, labels))
    scores = {k: n / len(group) - (outside[k] / len(others) if others else 0.0) for k, n in inside.items() if n >= 2}
    wording = {k: v for f in feats for k, v in f.items()}
    for key, (score, text) in _thresholds(group, others).items():
        scores[key], wording[key] = score, text
    scores = {k: s for k, s in scores.items() if s >= MIN_SCORE}
    if not scores:
        return None
    best = max(scores.values())
    names = [name for name, _ in group[0].fields]
    seen = list(dict.fromkeys(k for f in feats for k in f))
    place = {k: (names.index(k[1]) if k[1] in names else len(names), seen.index(k) if k in seen else 0) for k in scores}
    chosen = sorted((k for k, s in scores.items() if s >= best - 1e-9), key=place.__getitem__)[:MAX_CLUES]
    tokens = frozenset(t for k in chosen for t in line_tokens(str(int(k[2]) if k[0] in ("above", "below") else k[2])))
    return Rule(group[0].expected, _condition(chosen, wording), tokens, len(group))


def noisy_rule(rule: Rule, group: Sequence[Case], others: Sequence[Case], labels: frozenset[str],
               seed: tuple) -> Rule | None:
    """A wrong rule (the condition with another answer) or an irrelevant one (a word that one
    case expecting ANOTHER answer has, and no other case: no evidence for this answer); None if
    neither exists. Never a word of the group's own cases: a word only one of them has may
    still be a true clue ("battery" beside "lithium")."""
    answers = sorted(labels - {rule.label})
    wrong = Rule(answers[int(unit(*seed, "answer") * len(answers))], rule.condition, rule.tokens,
                 rule.support) if answers else None
    feats = [_features(c, labels) for c in [*group, *others]]
    counts = Counter(k for f in feats for k in f if k[0] == "word")
    lone = sorted(k for k, n in counts.items() if n == 1 and not any(k in f for f in feats[:len(group)]))
    irrelevant = None
    if lone:
        key = lone[int(unit(*seed, "word") * len(lone))]
        shown = next(f[key] for f in feats if key in f)
        irrelevant = Rule(rule.label, f"the {key[1]} line mentions {shown}", frozenset({key[2]}), rule.support)
    first, second = (wrong, irrelevant) if unit(*seed, "kind") < 0.5 else (irrelevant, wrong)
    return first or second
