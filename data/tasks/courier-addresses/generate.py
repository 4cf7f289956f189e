"""Generate the courier-addresses items (train/selection/test JSONL) byte-identically.

    python data/tasks/courier-addresses/generate.py [--out DIR]

Synthetic delivery addresses as customers of "Northbay Couriers", a fictional courier in the
fictional town of Northbay, type them into a message; the answer is the address as one line in
the courier's house format. Each item is built from a kind (a plain address or one of six house
rules), filled from phrase lists with one random.Random(SEED); nothing else is random. The
house rules are in README.md; the seed skill does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20261207
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind

NAMES = ["Mill", "Quay", "Orchard", "Chapel", "Station", "Harbour", "Church", "Victoria", "Meadow", "Bridge",
         "Castle", "Elm", "Willow", "Fern", "Beacon", "Rope", "Salt", "Lantern", "Gull", "Anchor", "Cliff",
         "Tide", "Netmaker", "Smithy"]
TYPES = ["Lane", "Close", "Way", "Crescent", "Hill", "Row", "Gardens", "Terrace", "Place", "Walk", "Parade"]
LONG_TYPES = {"Street": "St", "Road": "Rd"}  # rule 1: the only street types the house format shortens
DISTRICTS = ["Harbourside", "Old Quay", "Westcliff", "Saltings", "Upper Town", "Fishergate"]
WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 11: "eleven",
         12: "twelve", 14: "fourteen", 15: "fifteen", 17: "seventeen", 19: "nineteen", 20: "twenty"}
BUSINESSES = ["Harbour Bakery", "Gull & Anchor Pub", "Quayside Books", "Tide Line Surf School", "Northbay Dental",
              "Beacon Hardware", "The Net Loft Cafe", "Saltings Garden Centre"]
CARE_OF = ["c/o J. Marsh", "c/o the Okafor family", "FAO Dr R. Patel", "attn: Mrs L. Nowak", "c/o Sam Reid"]
OPENERS = ["Please deliver to: ", "Deliver to ", "My address is ", "Address: ", "Can you send it to ",
           "Delivery address - ", "Send to: ", "It's going to "]
ENDINGS = ["", "", "", " thanks", " Thank you!", " cheers", ".", " - thanks a lot"]


def postcode(r: random.Random) -> tuple[str, str]:
    """(the house form, e.g. NB4 7QX; the same with no space, as some customers type it)."""
    code = f"NB{r.randint(1, 9)} {r.randint(1, 9)}{r.choice('ABDEFGHJLNPQRSTUWXY')}{r.choice('ABDEFGHJLNPQRSTUWXY')}"
    return code, code.replace(" ", "")


def cased(r: random.Random, text: str) -> str:
    """How a customer types it: mostly lower case, sometimes as written, sometimes all capitals."""
    return r.choice([text.lower(), text.lower(), text, text.upper()])


def street(r: random.Random, types: list[str] | None = None) -> tuple[int, str]:
    return r.randint(1, 98), f"{r.choice(NAMES)} {r.choice(types or TYPES)}"


def house(number, name: str, code: str, flat: int | None = None) -> str:
    """The answer: the house format, which every item's answer follows."""
    return f"{'Flat %d, ' % flat if flat else ''}{number} {name}, Northbay {code}"


def plain(r, n):
    number, name = street(r)
    code, _ = postcode(r)
    typed = r.choice([f"{number} {name}, Northbay, {code}", f"{number} {name}, Northbay {code}",
                      f"{number} {name} Northbay {code}"])
    return cased(r, typed), house(number, name, code)


def long_type(r, n):
    """Rule 1: Street and Road are written St and Rd; every other street type stays in full."""
    number, name = street(r, list(LONG_TYPES))
    code, _ = postcode(r)
    short = name.rsplit(" ", 1)[0] + " " + LONG_TYPES[name.rsplit(" ", 1)[1]]
    return cased(r, f"{number} {name}, Northbay {code}"), house(number, short, code)


def flat(r, n):
    """Rule 2: a flat, apartment or unit number comes first, as "Flat N"."""
    number, name = street(r)
    code, _ = postcode(r)
    k = r.randint(1, 24)
    typed = r.choice([f"flat {k}, {number} {name}, Northbay {code}", f"{number} {name}, apartment {k}, Northbay {code}",
                      f"apt {k}, {number} {name}, Northbay {code}", f"unit {k}, {number} {name}, Northbay {code}",
                      f"{number} {name} (flat {k}), Northbay {code}"])
    return cased(r, typed), house(number, name, code, flat=k)


def squashed_postcode(r, n):
    """Rule 3: the postcode always has its space before the last three characters."""
    number, name = street(r)
    code, squashed = postcode(r)
    return cased(r, f"{number} {name}, Northbay {squashed}"), house(number, name, code)


def number_in_words(r, n):
    """Rule 4: a house number written in words is written in digits."""
    number = r.choice(sorted(WORDS))
    _, name = street(r)
    code, _ = postcode(r)
    return cased(r, f"{WORDS[number]} {name}, Northbay {code}"), house(number, name, code)


def district(r, n):
    """Rule 5: a district of the town is left out: the town is always just Northbay."""
    number, name = street(r)
    code, _ = postcode(r)
    where = r.choice(DISTRICTS)
    typed = r.choice([f"{number} {name}, {where}, Northbay {code}", f"{number} {name}, {where}, Northbay, {code}"])
    return cased(r, typed), house(number, name, code)


def addressee(r, n):
    """Rule 6: a business name or a "c/o" / "FAO" line is left out: the line is the address only."""
    number, name = street(r)
    code, _ = postcode(r)
    who = r.choice(BUSINESSES if n % 2 == 0 else CARE_OF)
    return cased(r, f"{who}, {number} {name}, Northbay {code}"), house(number, name, code)


KINDS = [  # (name, builder, count) -- counts are multiples of 6 so every split gets its share
    ("plain", plain, 48),
    ("rule_long_type", long_type, 24),
    ("rule_flat", flat, 24),
    ("rule_postcode", squashed_postcode, 24),
    ("rule_number_words", number_in_words, 24),
    ("rule_district", district, 24),
    ("rule_addressee", addressee, 24),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    seen: set[str] = set()
    dealt = 0
    for kind, build, count in KINDS:
        made = 0
        while made < count:
            typed, answer = build(r, made)
            message = f"{r.choice(OPENERS)}{typed}{r.choice(ENDINGS)}"
            if typed.lower() in seen:  # never the same address twice, in any split
                continue
            seen.add(typed.lower())
            splits[PATTERN[dealt % len(PATTERN)]].append({"message": message, "address": answer, "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"ca-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "message": i["message"], "address": i["address"], "kind": i["kind"]},
                            ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
