"""Generate the hall-bookings items (train/selection/test JSONL) byte-identically.

    python data/tasks/hall-bookings/generate.py [--out DIR]

Synthetic booking requests that people send to "Kestrel Lane Community Hall", a fictional hall;
the answer is the booking as the hall's diary records it, a JSON object with five fields (date,
start, hours, room, guests) in the hall's house conventions. Each item is built from a kind (a
plain request or one of six house rules), filled from phrase lists with one random.Random(SEED);
nothing else is random. The conventions and rules are in README.md; the seed skill states none.
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
from pathlib import Path

SEED = 20261208
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind

ROOMS = {  # house code -> how the hall's own leaflet names it (what a plain request says)
    "main-hall": ["the Main Hall", "the main hall"],
    "studio": ["the Studio", "the studio"],
    "kitchen": ["the Kitchen", "the kitchen"],
    "garden-room": ["the Garden Room", "the garden room"],
}
ALIASES = {  # rule 5: what people call a room instead; the diary uses its code
    "main-hall": ["the big hall", "the large hall", "the ballroom downstairs"],
    "studio": ["the dance studio", "the upstairs room", "the room with the mirrors"],
    "kitchen": ["the catering kitchen", "the cookery room"],
    "garden-room": ["the conservatory", "the glass room at the back", "the room by the garden"],
}
CAPACITY = 40  # rule 6: over this many guests only the main hall is allowed, whatever was asked for
SMALL_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
DOZENS = {12: "a dozen", 24: "two dozen", 36: "three dozen", 18: "a dozen and a half", 30: "two and a half dozen"}
HALVES = [("two and a half hours", 3), ("an hour and a half", 2), ("90 minutes", 2), ("three and a half hours", 4),
          ("2.5 hours", 3), ("four and a half hours", 5), ("150 minutes", 3)]
EVENTS = ["a birthday party", "a yoga class", "a quiz night", "a christening lunch", "a club meeting",
          "a baby shower", "a choir rehearsal", "a retirement do", "a craft fair", "a book group",
          "a wake", "a charity coffee morning", "an engagement party", "a residents' meeting"]
OPENERS = ["Hi, ", "Hello, ", "Good morning, ", "Dear hall committee, ", "Hiya, ", ""]
ENDINGS = ["", " Thanks!", " Many thanks.", " Cheers, Sam", " Best wishes, Priya", " Thank you, Mr Okafor",
           " Let me know if that works."]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def day(r: random.Random) -> tuple[str, str]:
    """(the date as the person writes it, the diary's YYYY-MM-DD): written the British way,
    day before month, never in the diary's form."""
    d = datetime.date(r.choice([2027, 2028]), r.randint(1, 12), r.randint(1, 28))
    month, suffix = MONTHS[d.month - 1], {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(d.day, "th")
    typed = r.choice([f"{d.strftime('%A')} {d.day} {month} {d.year}", f"{d.day:02d}/{d.month:02d}/{d.year}",
                      f"{month} {d.day}, {d.year}", f"the {d.day}{suffix} of {month} {d.year}",
                      f"{d.day} {month[:3]} {d.year}", f"{d.strftime('%a')} {d.day}/{d.month}/{d.year}"])
    return typed, d.isoformat()


def clock(r: random.Random, earliest: int = 9, latest: int = 19) -> tuple[str, str, int]:
    """(a start time as the person writes it, the diary's 24-hour HH:MM, its hour)."""
    hour, half = r.randint(earliest, latest), r.random() < 0.3
    twelve = hour - 12 if hour > 12 else hour
    ampm = "pm" if hour >= 12 else "am"
    part = "in the morning" if hour < 12 else ("in the afternoon" if hour < 18 else "in the evening")
    if hour == 12 and not half:
        typed = r.choice(["noon", "midday", "12pm"])
    elif half:
        typed = r.choice([f"{twelve}.30{ampm}", f"{twelve}:30 {ampm}", f"half past {twelve} {part}"])
    else:
        typed = r.choice([f"{twelve}{ampm}", f"{twelve} {ampm}", f"{twelve} o'clock {part}"])
    return typed, f"{hour:02d}:{'30' if half else '00'}", hour


def whole_hours(r: random.Random) -> tuple[str, int]:
    n = r.randint(2, 6)
    return r.choice([f"for {n} hours", f"for {SMALL_WORDS[n]} hours", f"for {n} hrs"]), n


def people(r: random.Random, low: int = 6, high: int = CAPACITY) -> tuple[str, int]:
    n = r.randint(low, high)
    return r.choice([f"for {n} people", f"{n} guests", f"about {n} of us", f"{n} people expected"]), n


def room(r: random.Random) -> tuple[str, str]:
    code = r.choice(sorted(ROOMS))
    return r.choice(ROOMS[code]), code


def request(r, when, start, length, where, who, event):
    """One message: the parts in one of a few orders, as people write them."""
    return r.choice([
        f"I'd like to book {where} on {when} at {start} {length}, {who}. It's for {event}.",
        f"Could we have {where} for {event} on {when}? Starting at {start}, {length}, {who}.",
        f"We're planning {event} on {when} and would like {where} from {start} {length}. {who.capitalize()}.",
        f"Is {where} free on {when}? We'd want it at {start} {length} for {event}, {who}.",
    ])


def booking(date, start, hours, code, guests):
    return {"date": date, "start": start, "hours": hours, "room": code, "guests": guests}


def plain(r, n):
    """Every field as the leaflet and the diary have it, bar the date and time formats."""
    (when, date), (start, at, _), (length, hours), (where, code), (who, guests) = (
        day(r), clock(r), whole_hours(r), room(r), people(r))
    return request(r, when, start, length, where, who, r.choice(EVENTS)), booking(date, at, hours, code, guests)


def at_capacity(r, n):
    """Rule 6 from below: up to 40 guests keep the room asked for (38, 39 or exactly 40)."""
    (when, date), (start, at, _), (length, hours) = day(r), clock(r), whole_hours(r)
    code = ["studio", "kitchen", "garden-room"][n % 3]
    who, guests = people(r, CAPACITY - 2, CAPACITY)
    if n % 2 == 0:
        who, guests = r.choice([f"for {CAPACITY} people", f"{CAPACITY} guests"]), CAPACITY
    return (request(r, when, start, length, r.choice(ROOMS[code]), who, r.choice(EVENTS)),
            booking(date, at, hours, code, guests))


def half_hour(r, n):
    """Rule 1: a booking is charged by the whole hour, so a part hour is rounded up."""
    (when, date), (start, at, _), (where, code), (who, guests) = day(r), clock(r), room(r), people(r)
    length, hours = r.choice(HALVES)
    return request(r, when, start, f"for {length}", where, who, r.choice(EVENTS)), booking(date, at, hours, code, guests)


def time_range(r, n):
    """Rule 2: a booking given as "from X until Y" lasts the hours between them."""
    (when, date), (where, code), (who, guests) = day(r), room(r), people(r)
    start, at, hour = clock(r, 9, 18)
    while at.endswith("30"):  # whole hours only, so rule 1 never applies too
        start, at, hour = clock(r, 9, 18)
    hours = r.randint(2, min(5, 23 - hour))
    end = hour + hours
    until = f"{end - 12 if end > 12 else end}{'pm' if end >= 12 else 'am'}"
    text = r.choice([f"I'd like to book {where} on {when} from {start} until {until}, {who}, for {r.choice(EVENTS)}.",
                     f"Could we have {where} on {when} between {start} and {until}? {who.capitalize()}.",
                     f"We need {where} on {when}, {start} to {until}, for {r.choice(EVENTS)}, {who}."])
    return text, booking(date, at, hours, code, guests)


def dozens(r, n):
    """Rule 3: guests given in dozens are written as the number."""
    (when, date), (start, at, _), (length, hours), (where, code) = day(r), clock(r), whole_hours(r), room(r)
    guests = r.choice(sorted(DOZENS))
    who = r.choice([f"for {DOZENS[guests]} people", f"{DOZENS[guests]} guests", f"roughly {DOZENS[guests]} of us"])
    return request(r, when, start, length, where, who, r.choice(EVENTS)), booking(date, at, hours, code, guests)


def children(r, n):
    """Rule 4: children count as guests: adults and children are added up."""
    (when, date), (start, at, _), (length, hours), (where, code) = day(r), clock(r), whole_hours(r), room(r)
    adults, kids = r.randint(5, 25), r.randint(3, 14)
    who = r.choice([f"{adults} adults and {kids} children", f"{adults} grown-ups plus {kids} kids",
                    f"for {adults} adults and {kids} children"])
    return (request(r, when, start, length, where, who, r.choice(EVENTS)),
            booking(date, at, hours, code, adults + kids))


def alias(r, n):
    """Rule 5: a room called by another name is written with its code."""
    (when, date), (start, at, _), (length, hours), (who, guests) = day(r), clock(r), whole_hours(r), people(r)
    code = sorted(ALIASES)[n % len(ALIASES)]
    return (request(r, when, start, length, r.choice(ALIASES[code]), who, r.choice(EVENTS)),
            booking(date, at, hours, code, guests))


def capacity(r, n):
    """Rule 6: over 40 guests only fit the main hall, whatever room was asked for."""
    (when, date), (start, at, _), (length, hours) = day(r), clock(r), whole_hours(r)
    asked = ["studio", "kitchen", "garden-room"][n % 3]
    who, guests = people(r, CAPACITY + 1, 90)
    return (request(r, when, start, length, r.choice(ROOMS[asked]), who, r.choice(EVENTS)),
            booking(date, at, hours, "main-hall", guests))


KINDS = [  # (name, builder, count) -- counts are multiples of 6 so every split gets its share
    ("plain", plain, 36),
    ("capacity_at_or_under", at_capacity, 12),
    ("rule_half_hour", half_hour, 24),
    ("rule_time_range", time_range, 24),
    ("rule_dozens", dozens, 24),
    ("rule_children", children, 24),
    ("rule_room_alias", alias, 24),
    ("rule_capacity", capacity, 24),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    seen: set[str] = set()
    dealt = 0
    for kind, build, count in KINDS:
        made = 0
        while made < count:
            text, answer = build(r, made)
            opener = r.choice(OPENERS)
            if opener and not text.startswith("I'"):  # "Hi, could we ...", but "Hi, I'd like ..."
                text = text[0].lower() + text[1:]
            message = f"{opener}{text}{r.choice(ENDINGS)}"
            if text in seen:  # never the same request twice, in any split
                continue
            seen.add(text)
            splits[PATTERN[dealt % len(PATTERN)]].append({"message": message, "booking": answer, "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"hb-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "message": i["message"], "booking": i["booking"], "kind": i["kind"]},
                            ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
