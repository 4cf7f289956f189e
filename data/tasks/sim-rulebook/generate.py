"""Generate the sim-rulebook items (train/selection/test JSONL) byte-identically.

    python data/tasks/sim-rulebook/generate.py [--out DIR]

Orders of "Harbor & Pine Outfitters", an outdoor-gear shop. Every order falls under
exactly one of the ten house rules defined in skillopt/models/simworld.py (the simulated world); the
generator builds the order so its rule applies and no other one does, and checks it with
the world's own rule detector. 30 orders per rule, dealt 12 train / 6 selection / 12 test.
Everything random comes from one random.Random(SEED).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from skillopt.models.simworld import RULES, parse_order  # noqa: E402  (the world's rules decide the labels)

SEED = 20250307
PER_RULE = 30
DEAL = ("train", "test", "selection", "train", "test") * 2 + ("train", "test", "train", "test", "selection") * 4
PROMPT = ("Choose the dispatch route for this Harbor & Pine Outfitters order.\n"
          "Order: {order}\nCustomer: {customer}\nShip to: {ship_to}\nItems: {items}\nTotal: {total}\nNote: {note}\n"
          "Routes: standard, freight, air, ground, review, hold, consolidate, courier, postal, split, pickup.\n"
          "Answer with the route only.")

FIRST = ["Dana", "Marcus", "Priya", "Owen", "Lucia", "Theo", "Hannah", "Rafael", "Mei", "Jonah", "Aisha", "Caleb",
         "Ingrid", "Mateo", "Nora", "Samir", "Greta", "Elliot", "Yara", "Felix", "Rosa", "Dmitri", "Keiko", "Liam"]
LAST = ["Whitfield", "Okafor", "Lindgren", "Castillo", "Brennan", "Nakamura", "Holloway", "Petrov", "Alvarez",
        "McAllister", "Osei", "Fontaine", "Kowalczyk", "Reyes", "Sandoval", "Thornbury", "Varga", "Quinn"]
STREETS = ["Alder St", "Cedar Ave", "Juniper Ln", "Ridgeview Dr", "Maple Ct", "Summit Rd", "Willow Way",
           "Birch Blvd", "Larkspur Pl", "Fir Hollow Rd", "Granite Ave", "Osprey Ln"]
CITIES = [("Boise", "ID", "837"), ("Bend", "OR", "977"), ("Missoula", "MT", "598"), ("Spokane", "WA", "992"),
          ("Flagstaff", "AZ", "860"), ("Boulder", "CO", "803"), ("Duluth", "MN", "558"), ("Asheville", "NC", "288"),
          ("Burlington", "VT", "054"), ("Portland", "ME", "041"), ("Salt Lake City", "UT", "841"),
          ("Eugene", "OR", "974"), ("Bozeman", "MT", "597"), ("Madison", "WI", "537"), ("Olympia", "WA", "985")]
REMOTE = [("Anchorage", "AK", "995"), ("Fairbanks", "AK", "997"), ("Juneau", "AK", "998"), ("Honolulu", "HI", "968"),
          ("Hilo", "HI", "967"), ("Kailua", "HI", "967")]
ACCOUNTS = ["retail", "retail, member since 2019", "retail, newsletter subscriber", "retail, first order",
            "retail, member since 2022", "retail, loyalty tier Summit"]
WHOLESALE = ["wholesale trade account", "wholesale, trade account 4471", "wholesale partner, Ridge Outfitters Co-op",
             "wholesale trade account, net-30 terms"]
CHARGEBACK = ["retail, chargeback on file (2023)", "retail, 2 chargebacks on file", "retail, member since 2020, "
              "chargeback on file", "retail, chargeback disputed last spring"]
CATALOG = [("Ridgeline 2P tent", 289.0), ("Alpine down jacket", 219.0), ("Trailhead 45L backpack", 179.0),
           ("Merino base layer", 64.0), ("trekking poles (pair)", 89.0), ("Granite hiking boots", 159.0),
           ("camp stove", 54.0), ("insulated sleeping pad", 119.0), ("Cascade rain shell", 189.0),
           ("water filter", 39.0), ("wool hiking socks (3-pack)", 29.0), ("titanium cookset", 74.0),
           ("20F down sleeping bag", 329.0), ("camp chair", 49.0), ("wide-brim sun hat", 34.0)]
EXPENSIVE = [("Summit 4-season expedition tent", 1450.0), ("Polar expedition parka", 890.0),
             ("Basecamp 6P family tent", 760.0), ("carbon touring skis with bindings", 1180.0)]
LITHIUM = ["power bank (lithium-ion, 20,000 mAh)", "rechargeable headlamp with lithium battery pack",
           "GPS messenger with spare lithium cells", "heated gloves with lithium batteries"]
ENGRAVED = ["canvas duffel, engraved 'J.M.'", "steel camp mug, engraved with initials", "pocket knife, engraved "
            "'Happy 40th'", "leather journal, engraved cover"]
NOTES = ["none", "Leave at the back door.", "Gift - no invoice in the box please.", "Call on arrival.",
         "Please use recycled packaging.", "Ring twice, the bell is quiet.", "none", "none"]
SATURDAY = ["Please deliver on Saturday, we're away during the week.", "Needs to arrive on a Saturday morning.",
            "Saturday delivery please - trip leaves Sunday.", "Can this come Saturday? Nobody is home weekdays."]


def person(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def address(r: random.Random, city: tuple[str, str, str] | None = None, po_box: bool = False) -> str:
    name, state, zip3 = city or r.choice(CITIES)
    street = f"PO Box {r.randint(10, 9999)}" if po_box else f"{r.randint(12, 9890)} {r.choice(STREETS)}"
    return f"{street}, {name}, {state} {zip3}{r.randint(0, 99):02d}"


def basket(r: random.Random, extra: list[tuple[str, float]] = (), low: float = 0.0,
           high: float = 2400.0) -> tuple[str, float]:
    while True:
        lines = [(r.randint(1, 2), name, price) for name, price in r.sample(CATALOG, r.randint(1, 3))]
        lines += [(1, name, price) for name, price in extra]
        r.shuffle(lines)
        total = sum(q * p for q, _, p in lines)
        if low < total < high:
            return "; ".join(f"{q} x {name}" for q, name, _ in lines), total


def order(r: random.Random, rule_id: str) -> dict[str, str]:
    letters = "ABCDEFGHJKLMNPRSTUVWY"
    code = f"{'Z' if rule_id == 'z-code' else r.choice(letters)}-{r.randint(10000, 99999)}"
    account = {"wholesale": WHOLESALE, "chargeback": CHARGEBACK}.get(rule_id, ACCOUNTS)
    city = r.choice(REMOTE) if rule_id == "remote-state" else ("Tacoma", "WA", "984") if rule_id == "tacoma" else None
    extra = {"lithium": [(r.choice(LITHIUM), 79.0)], "engraved": [(r.choice(ENGRAVED), 45.0)],
             "high-value": [r.choice(EXPENSIVE), r.choice(EXPENSIVE)]}.get(rule_id, [])
    items, total = basket(r, extra, *((2500.0, 9000.0) if rule_id == "high-value" else (0.0, 2400.0)))
    return {"order": code, "customer": f"{person(r)} ({r.choice(account)})",
            "ship_to": address(r, city, po_box=rule_id == "po-box"), "items": items, "total": f"${total:,.2f}",
            "note": r.choice(SATURDAY if rule_id == "saturday" else NOTES)}


def build() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    for rule in RULES:
        for k in range(PER_RULE):
            fields = order(r, rule.id)
            found = [x.id for x in RULES if x.applies(parse_order(PROMPT.format(**fields)))]
            assert found == [rule.id], f"{rule.id}: generated order falls under {found}: {fields}"
            splits[DEAL[k]].append({**fields, "expected": rule.label})
    for name, items in splits.items():
        r.shuffle(items)
        for i, item in enumerate(items, 1):
            splits[name][i - 1] = {"id": f"{name[:3]}-{i:03d}", **item}
    return splits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for name, items in build().items():
        text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8", newline="\n")
        print(f"{name}: {len(items)} items -> {out / f'{name}.jsonl'}")


if __name__ == "__main__":
    main()
