"""Generate the word-problems items (train/selection/test JSONL) byte-identically.

    python data/tasks/word-problems/generate.py [--out DIR]

Arithmetic word problems of 2-3 steps from 18 templates (shopping, travel, recipes,
savings, rounding-up traps, percentages, averages ...). Numbers are drawn with one
random.Random(SEED) and chosen so every answer is exact (integer, or money with at
most 2 decimals; a draw that would need rounding is discarded and redrawn).
Several templates hide a classic trap: rounding up (buses, weeks, days), whole boxes
only, unit changes (hours to minutes, metres to kilometres), overtime rates.
"""
from __future__ import annotations

import argparse
import json
import math
import random
from fractions import Fraction
from pathlib import Path

SEED = 4242
PATTERN = ("train", "test", "selection", "test", "train", "test")
PER_TEMPLATE = 10  # 18 templates x 10 = 180 items, 60/30/90

NAMES = ["Maya", "Liam", "Aisha", "Jonas", "Elena", "Kofi", "Yuki", "Omar", "Sara", "Mateo", "Nina", "Arjun"]


def name(r):
    return r.choice(NAMES)


def change(r):
    packs, per, price_c = r.randint(2, 6), r.randint(3, 8), r.choice([45, 60, 75, 80, 95, 120, 125])
    note = next(b for b in (10, 20, 50, 100) if b * 100 > packs * per * price_c)
    n = name(r)
    q = (f"{n} buys {packs} packs of pencils. Each pack holds {per} pencils and every pencil costs "
         f"${price_c / 100:.2f}. {n} pays with a ${note} bill. How much change, in dollars, does {n} get?")
    return q, Fraction(note * 100 - packs * per * price_c, 100)


def travel_minutes(r):
    d1, v1 = r.choice([(30, 60), (45, 90), (20, 40), (50, 100), (36, 72), (25, 50)])
    d2, v2 = r.choice([(10, 20), (15, 30), (24, 48), (40, 60), (18, 36), (12, 24)])
    q = (f"A cyclist rides {d1} km at {v1} km/h and then {d2} km at {v2} km/h. "
         "How many minutes does the whole trip take?")
    return q, Fraction(d1 * 60, v1) + Fraction(d2 * 60, v2)


def recipe(r):
    serves, grams = r.choice([4, 6, 8]), r.choice([240, 360, 480, 600])
    target = r.choice([s for s in (2, 3, 5, 9, 10, 12, 14) if grams * s % serves == 0 and s != serves])
    q = (f"A soup recipe for {serves} people needs {grams} g of lentils. {name(r)} cooks the soup for {target} people. "
         "How many grams of lentils are needed?")
    return q, Fraction(grams * target, serves)


def savings_weeks(r):
    goal, have, weekly = r.choice([180, 250, 320, 415, 560]), r.choice([20, 35, 50, 75]), r.choice([15, 20, 25, 30, 40])
    n = name(r)
    q = (f"{n} wants a bike that costs ${goal}. {n} has already saved ${have} and saves ${weekly} every week. "
         "After how many whole weeks can the bike be bought?")
    return q, Fraction(math.ceil((goal - have) / weekly))


def buses(r):
    students, seats, cost = r.randint(95, 260), r.choice([40, 45, 48, 52]), r.choice([180, 210, 250, 320])
    q = (f"A school takes {students} students on a trip. Each bus has {seats} seats and costs ${cost} to rent. "
         "What is the total cost of the buses needed?")
    return q, Fraction(math.ceil(students / seats) * cost)


def discount(r):
    price, off = r.choice([40, 60, 80, 120, 150, 240]), r.choice([10, 15, 20, 25, 30])
    extra = r.choice([5, 8, 12])
    q = (f"A jacket costs ${price}. The shop gives {off}% off, and then {name(r)} pays ${extra} for gift wrapping. "
         "How much does the jacket cost in total, in dollars?")
    return q, Fraction(price * (100 - off), 100) + extra


def factory(r):
    workers, per_hour, hours, bad = r.randint(3, 9), r.choice([12, 15, 18, 20]), r.choice([6, 7, 8]), r.randint(5, 30)
    q = (f"In a workshop {workers} workers each assemble {per_hour} lamps per hour. They work for {hours} hours, "
         f"and {bad} lamps fail inspection. How many lamps pass inspection?")
    return q, Fraction(workers * per_hour * hours - bad)


def fence(r):
    length, width, price = r.randint(8, 30), r.randint(5, 20), r.choice([12, 15, 18, 22])
    q = (f"A rectangular garden is {length} m long and {width} m wide. Fencing costs ${price} per metre. "
         "How much does it cost to fence the whole garden, in dollars?")
    return q, Fraction(2 * (length + width) * price)


def ages(r):
    son, factor, years, n = r.randint(4, 14), r.choice([3, 4]), r.randint(2, 10), name(r)
    q = (f"{n}'s father is {factor} times as old as {n}'s brother, who is {son}. "
         f"How old will the father be in {years} years?")
    return q, Fraction(son * factor + years)


def tank(r):
    capacity, fill, leak = r.choice([600, 840, 900, 1200]), r.choice([25, 30, 40]), r.choice([5, 10])
    while capacity % (fill - leak):
        capacity += 60
    q = (f"A {capacity}-litre tank is filled at {fill} litres per minute, but it leaks {leak} litres per minute. "
         "Starting empty, how many minutes until it is full?")
    return q, Fraction(capacity, fill - leak)


def reading(r):
    pages, per_day, days, later = r.choice([320, 384, 450, 512]), r.choice([15, 20, 25]), r.randint(4, 8), r.choice([30, 35, 40])
    n = name(r)
    q = (f"A book has {pages} pages. {n} reads {per_day} pages a day for {days} days, then {later} pages a day. "
         f"How many more days does {n} need to finish the book?")
    return q, Fraction(math.ceil((pages - per_day * days) / later))


def split_bill(r):
    meal, tip, people = r.choice([84, 96, 120, 150, 168, 210]), r.choice([10, 15, 20]), r.choice([3, 4, 5, 6])
    q = (f"Dinner for {people} friends costs ${meal}. They add a {tip}% tip and split the total equally. "
         "How much does each friend pay, in dollars?")
    return q, Fraction(meal * (100 + tip), 100 * people)


def apples(r):
    apples_n, per_box, price = r.randint(150, 500), r.choice([12, 18, 24]), r.choice([9, 11, 14])
    q = (f"An orchard picks {apples_n} apples and packs them in boxes of {per_box}; only full boxes are sold, "
         f"at ${price} each. How many dollars does the orchard earn?")
    return q, Fraction(apples_n // per_box * price)


def overtime(r):
    rate, hours, n = r.choice([14, 16, 18, 20, 22]), r.randint(41, 52), name(r)
    q = (f"{n} earns ${rate} an hour for the first 40 hours of a week and 1.5 times that rate for every "
         f"hour over 40. Last week {n} worked {hours} hours. How much was the pay, in dollars?")
    return q, Fraction(40 * rate) + Fraction(3 * rate, 2) * (hours - 40)


def laps(r):
    lap, count, days = r.choice([400, 250, 800]), r.choice([5, 6, 8, 10]), r.choice([5, 6, 7])
    q = (f"A runner runs {count} laps of a {lap} m track every day for {days} days. "
         "How many kilometres does the runner cover in total?")
    return q, Fraction(lap * count * days, 1000)


def tickets(r):
    adult, child, na, nc, costs = r.choice([12, 15, 18]), r.choice([6, 7, 9]), r.randint(40, 120), r.randint(30, 90), r.choice([300, 450, 600])
    q = (f"A school play sells {na} adult tickets at ${adult} and {nc} child tickets at ${child}. "
         f"The costs of the play were ${costs}. What is the profit in dollars?")
    return q, Fraction(na * adult + nc * child - costs)


def fuel(r):
    per100, km, price = r.choice([5, 6, 8]), r.choice([250, 350, 450, 600]), r.choice([160, 175, 190])
    q = (f"A car uses {per100} litres of fuel per 100 km. Fuel costs ${price / 100:.2f} per litre. "
         f"What does a {km} km trip cost in fuel, in dollars?")
    return q, Fraction(per100 * km * price, 100 * 100)


def average(r):
    scores = [r.randint(60, 95) for _ in range(4)]
    target = r.choice([t for t in range(50, 96) if 0 <= 5 * t - sum(scores) <= 100])
    q = (f"{name(r)} scored {', '.join(map(str, scores[:3]))} and {scores[3]} on four tests. "
         f"What score is needed on the fifth test to average exactly {target}?")
    return q, Fraction(5 * target - sum(scores))


TEMPLATES = [change, travel_minutes, recipe, savings_weeks, buses, discount, factory, fence, ages, tank, reading,
             split_bill, apples, overtime, laps, tickets, fuel, average]


def number(value: Fraction) -> int | float | None:
    """Integers stay integers; money keeps at most 2 decimals; None = would need rounding."""
    if value.denominator == 1:
        return int(value)
    return float(value) if (value * 100).denominator == 1 else None


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    dealt = 0
    for template in TEMPLATES:
        seen: set[str] = set()
        while len(seen) < PER_TEMPLATE:
            question, answer = template(r)
            if question in seen or number(answer) is None or answer < 0:
                continue
            seen.add(question)
            splits[PATTERN[dealt % len(PATTERN)]].append({"question": question, "answer": number(answer),
                                                          "template": template.__name__})
            dealt += 1
    for name_, items in splits.items():
        r.shuffle(items)
        for n, item in enumerate(items, 1):
            item["id"] = f"wp-{name_[:3]}-{n:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for split, items in generate().items():
        lines = [json.dumps({"id": i["id"], "question": i["question"], "answer": i["answer"], "template": i["template"]},
                            ensure_ascii=False) for i in items]
        (out / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
