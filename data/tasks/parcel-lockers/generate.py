"""Generate the parcel-lockers items (train/selection/test JSONL) byte-identically.

    python data/tasks/parcel-lockers/generate.py [--out DIR]

Synthetic parcel descriptions at the depot of "BoxPoint", a fictional parcel-locker network in
the fictional town of Brackwell: which pickup action does this parcel get? Each description is
built from a kind (a plain action or one of six house rules), filled from phrase lists with one
random.Random(SEED); nothing else is random. The house rules are in README.md; the seed skill
does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20251121
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind
ACTIONS = ("standard-locker", "large-locker", "cold-locker", "counter-pickup", "id-check", "return-to-sender",
           "hold-for-payment")
STANDARD_MAX = 45  # longest side (cm) of a standard locker; the seed skill states it
LARGE_MAX = 100  # longest side (cm) of a large locker; the seed skill states it

RECIPIENTS = ["A. Novak", "J. Okafor", "M. Brennan", "S. Patel", "L. Moreau", "T. Nakamura", "R. Kowalski",
              "E. Lindqvist", "D. Mensah", "C. Ferreira", "H. Walsh", "P. Adeyemi", "K. O'Neill", "Y. Haddad"]
BANKS = ["the Mill Street station lockers", "the lockers at the Harlow Road supermarket",
         "the Quayside car park locker bank", "the university library lockers", "the Elm Park locker bank",
         "the lockers by Brackwell leisure centre", "the Canal Wharf locker bank"]
NOTES = ["", "", "", "Recipient notified by text message.", "Paid in full at checkout.", "Return label enclosed.",
         "Gift wrapped.", "Do not bend.", "Second of two parcels for this recipient.",
         "Recipient usually collects after work.", "Handle with care."]
ABROAD = ["a shop in Japan", "a seller in the United States", "a boutique in Italy", "a bookshop in Canada",
          "a maker in South Korea", "a workshop in Portugal", "a store in Australia"]


# ------------------------------------------------------------ rendering

def kg(r: random.Random, weight: float) -> str:
    """A weight as a depot note might write it (kg with or without a space, kilos, grams)."""
    n = f"{weight:g}"
    forms = [f"{n} kg", f"{n}kg"] + ([f"{n} kilos", f"{n} kilograms"] if weight != 1 else [])
    if weight < 1:
        forms.append(f"{round(weight * 1000)} g")
    return r.choice(forms)


def dims(r: random.Random, longest: int) -> str:
    b = r.randint(max(3, longest // 4), max(3, longest * 2 // 3))  # the longest side stays the longest
    c = r.randint(max(2, b // 4), max(2, b // 2))
    return r.choice([f"{longest} x {b} x {c} cm", f"{longest}x{b}x{c} cm", f"{longest} by {b} by {c} cm",
                     f"{b} x {longest} x {c} cm"])


def describe(r: random.Random, p: dict) -> str:
    """One free-text description of a parcel: sender, contents, size, weight, recipient, notes."""
    size, weight = dims(r, p["longest"]), kg(r, p["weight"])
    recipient = f"{r.choice(RECIPIENTS)} at {r.choice(BANKS)}"
    notes = [n for n in (p.get("note", ""), r.choice([n for n in NOTES if n not in p.get("avoid", ())])) if n]
    note = " ".join(notes)
    contents = p["contents"]
    style = r.randrange(3)
    if style == 0:
        fields = [f"Contents: {contents[0].upper() + contents[1:]}.", f"Size: {size}.", f"Weight: {weight}."]
        r.shuffle(fields)
        parts = [f"Sender: {p['sender']}.", *fields, f"Recipient: {recipient}."] + ([f"Note: {note}"] if note else [])
        return " ".join(parts)
    if style == 1:
        return " ".join(x for x in (f"From {p['sender']}: {contents}, {size}, {weight}, for {recipient}.", note) if x)
    text = (f"{contents[0].upper() + contents[1:]} sent by {p['sender']} to {recipient}; the parcel is {size} "
            f"and weighs {weight}.")
    return " ".join(x for x in (text, note) if x)


def parcel(r: random.Random, sender: str, contents: str, longest: tuple[int, int], weight: tuple[float, float],
           note: str = "", avoid: tuple[str, ...] = ()) -> dict:
    return {"sender": sender, "contents": contents, "longest": r.randint(*longest),
            "weight": round(r.uniform(*weight), 1), "note": note, "avoid": avoid}


def pick(r: random.Random, options: list) -> dict:
    """One parcel from a list of (sender, contents, longest range, weight range)."""
    return parcel(r, *r.choice(options))


# ------------------------------------------------------------ plain actions

STANDARD = [  # fits a standard locker (longest side 45 cm or less), light, nothing special
    ("Northgate Books", "three paperback novels", (20, 30), (0.6, 1.5)),
    ("Threadline Clothing", "two cotton T-shirts, size large", (25, 35), (0.3, 0.6)),
    ("a marketplace seller", "a silicone phone case", (10, 18), (0.1, 0.3)),
    ("Fable Toys", "a family board game", (27, 40), (1.0, 2.0)),
    ("Kestrel Outdoor", "a pair of running shoes", (30, 36), (0.8, 1.4)),
    ("Kestrel Outdoor", "a hiking first-aid kit with plasters and bandages", (15, 22), (0.3, 0.6)),
    ("Threadline Clothing", "thermal gloves for cold weather", (18, 25), (0.1, 0.3)),
    ("Fable Toys", "a 1000-piece jigsaw puzzle", (25, 35), (0.6, 1.0)),
    ("Pebble & Pine Homewares", "a set of four stoneware mugs", (25, 35), (1.5, 2.5)),
    ("a marketplace seller", "a leather ID card holder", (10, 14), (0.1, 0.2)),
    ("Pebble & Pine Homewares", "a bamboo organiser for the kitchen counter", (30, 40), (0.8, 1.6)),
    ("Brackwell Council", "a large envelope of documents", (30, 35), (0.2, 0.4)),
]
LARGE = [  # too long for a standard locker, fits a large one (longest side 50-95 cm)
    ("Pebble & Pine Homewares", "a boxed desk lamp", (50, 60), (2.0, 4.0)),
    ("Pebble & Pine Homewares", "a king-size duvet, vacuum packed", (60, 75), (3.0, 5.0)),
    ("Brightpixel Displays", "a 27-inch computer monitor", (65, 75), (6.0, 9.0)),
    ("Kestrel Outdoor", "an empty hard-shell suitcase", (65, 80), (3.5, 5.0)),
    ("Pebble & Pine Homewares", "two folding garden chairs", (80, 95), (6.0, 10.0)),
    ("Pebble & Pine Homewares", "a boxed pedestal fan", (55, 75), (4.0, 6.0)),
    ("Kestrel Outdoor", "a four-person tent in its bag", (55, 70), (5.0, 8.0)),
    ("Fable Toys", "a wooden dolls' house kit", (55, 70), (6.0, 10.0)),
    ("Pebble & Pine Homewares", "a small flat-packed bookcase", (75, 90), (10.0, 15.0)),
]
COLD = [  # marked chilled, frozen or refrigerated: the obvious cold-locker parcels
    ("Frostbox Meals", "frozen ready meals, box marked 'FROZEN - store below -18 C'", (30, 40), (3.0, 6.0)),
    ("The Curd Cellar", "a selection of cheeses, label 'keep chilled'", (25, 35), (1.5, 3.0)),
    ("Kitchen Crate", "a recipe meal kit with ice packs, marked 'keep refrigerated'", (35, 45), (4.0, 7.0)),
    ("Dairy Dell", "tubs of ice cream packed in dry ice, marked 'frozen'", (30, 40), (2.5, 5.0)),
    ("Harbour Fishmongers", "smoked salmon, label 'chilled - keep at 0-5 C'", (25, 35), (1.0, 2.0)),
    ("Sugar Lane Bakery", "cream cakes, box marked 'chilled'", (30, 40), (1.0, 2.5)),
    ("Wagtail Pet Foods", "frozen raw dog food in an insulated box", (35, 45), (5.0, 8.0)),
]
COUNTER = [  # too long for any locker (longest side 120 cm or more), never over 20 kg
    ("Spoke & Chain Cycles", "a boxed bicycle", (140, 160), (13.0, 18.0)),
    ("Pebble & Pine Homewares", "a rolled-up wool rug", (160, 220), (8.0, 15.0)),
    ("Kestrel Outdoor", "a foam surfboard in a bag", (180, 220), (4.0, 7.0)),
    ("Pebble & Pine Homewares", "two metal curtain poles", (180, 220), (4.0, 6.0)),
    ("Pebble & Pine Homewares", "a garden parasol", (180, 210), (6.0, 10.0)),
    ("Pebble & Pine Homewares", "a full-length mirror, well padded", (130, 160), (9.0, 14.0)),
    ("Kestrel Outdoor", "a pair of skis with poles", (160, 190), (5.0, 8.0)),
    ("OfficeDirect", "the top for a standing desk", (120, 160), (14.0, 19.0)),
]
AGE = [  # age-restricted goods: the obvious id-check parcels
    ("Glenmore Wine & Spirits", "a bottle of single malt whisky with an '18+ only' sticker", (30, 38), (1.5, 2.5)),
    ("Glenmore Wine & Spirits", "six bottles of red wine, age-restricted delivery", (30, 40), (8.0, 10.0)),
    ("Cutler & Co", "a set of chef's knives, 'over-18 only' on the label", (35, 45), (1.5, 3.0)),
    ("Cloudline Vape Supplies", "bottles of nicotine e-liquid (no device), age-restricted", (12, 20), (0.2, 0.6)),
    ("Hopyard Brewery", "a mixed case of craft beer, age verification required", (35, 42), (8.0, 11.0)),
    ("Dunmore Tobacconists", "a box of cigars with a 'Challenge 25' sticker", (20, 28), (0.4, 0.9)),
    ("Kestrel Outdoor", "a folding pocket knife with a locking blade, sale to adults only", (12, 18), (0.2, 0.4)),
]
UNDELIVERABLE = ["No one of that name has an account at this locker bank.", "The recipient has refused the parcel.",
                 "The recipient has moved away and left no forwarding address.",
                 "Not collected within the 14-day limit and the recipient has not answered reminders.",
                 "The recipient's account was closed at their request."]
CHARGES = ["Import duty of £{x} has not been paid yet.", "Postage underpaid: £{x} still owed.",
           "Customs charge of £{x} outstanding.", "Import VAT of £{x} is due before release."]


def standard(r):
    if r.random() < 0.3:  # an import under the value threshold: goes by size (a hard negative for rule 3)
        p = pick(r, STANDARD)
        p["sender"], p["note"] = r.choice(ABROAD), declared(r, r.randint(8, 120))
        return p
    return pick(r, STANDARD)


def large(r):
    if r.random() < 0.3:
        p = pick(r, LARGE)
        p["sender"], p["note"] = r.choice(ABROAD), declared(r, r.randint(8, 120))
        return p
    return pick(r, LARGE)


def cold(r):
    return pick(r, COLD)


def counter(r):
    return pick(r, COUNTER)


def age_restricted(r):
    return pick(r, AGE)


def undeliverable(r):
    p = pick(r, STANDARD + LARGE)
    p["note"], p["avoid"] = r.choice(UNDELIVERABLE), ("Recipient notified by text message.",
                                                       "Recipient usually collects after work.")
    return p


def charge_due(r):
    p = pick(r, STANDARD)
    p["note"], p["avoid"] = r.choice(CHARGES).format(x=f"{r.randint(300, 4800) / 100:.2f}"), ("Paid in full at checkout.",)
    if "Import" in p["note"] or "Customs" in p["note"]:
        p["sender"] = r.choice(ABROAD)
    return p


def declared(r: random.Random, value: int) -> str:
    return r.choice([f"Declared value £{value}.", f"Customs form: value £{value}.", f"Declared at {value} GBP.",
                     f"Value on the customs declaration: £{value}."])


# ------------------------------------------------------------ house rules

def lithium(r):
    """Rule 1: a parcel with lithium batteries (or their warning label) goes to the counter, however small."""
    return r.choice([
        parcel(r, "VoltHaus Electronics", "a 20,000 mAh power bank", (12, 20), (0.3, 0.6)),
        parcel(r, "VoltHaus Electronics", "two spare lithium-ion camera batteries", (10, 15), (0.1, 0.3)),
        parcel(r, "SkyRig Drones", "a spare drone battery pack", (15, 25), (0.3, 0.8)),
        parcel(r, "Spoke & Chain Cycles", "a replacement e-bike battery", (35, 45), (2.5, 3.8)),
        parcel(r, "VoltHaus Electronics", "a replacement laptop battery", (20, 30), (0.3, 0.6)),
        parcel(r, "Pebble & Pine Homewares", "a cordless drill with a spare battery",
               (30, 42), (1.8, 3.0), r.choice(["The box carries a lithium battery warning label.",
                                                "UN3481 sticker on the box.", "Contains lithium-ion batteries."])),
        parcel(r, "Fable Toys", "a remote-control car kit", (30, 40), (0.8, 1.5),
               r.choice(["Lithium battery warning sticker on the side.", "Marked UN3481: lithium batteries packed "
                                                                         "with equipment."])),
    ])


DENSE = [  # (sender, contents, longest range): small or medium parcels that can be very heavy
    ("IronWorks Fitness", "a pair of cast-iron dumbbells", (30, 40)),
    ("Tileworth", "a box of porcelain floor tiles", (35, 45)),
    ("Wagtail Pet Foods", "two sacks of clay cat litter", (50, 60)),
    ("Northgate Books", "a box of hardback encyclopaedias", (35, 45)),
    ("IronWorks Fitness", "a kettlebell", (25, 30)),
    ("OfficeDirect", "ten reams of printer paper", (30, 35)),
    ("Wagtail Pet Foods", "a sack of dry dog food", (55, 75)),
    ("Pebble & Pine Homewares", "a set of cast-iron pans", (35, 45)),
    ("IronWorks Fitness", "weight plates for a barbell", (40, 50)),
    ("Tileworth", "a bag of tile adhesive", (50, 65)),
]


def overweight(r):
    """Rule 2: over 20 kg goes to the counter whatever its size (locker floors take 20 kg)."""
    sender, contents, longest = r.choice(DENSE)
    return {"sender": sender, "contents": contents, "longest": r.randint(*longest),
            "weight": r.choice([r.randint(21, 34), r.randint(201, 340) / 10]), "note": ""}


def weight_light(r, n: int):
    """Hard negative for rule 2: 20 kg or less goes by size (exactly 20 kg in every split)."""
    sender, contents, longest = r.choice(DENSE)
    weight = 20 if n < 3 else r.choice([r.randint(14, 19), r.randint(140, 199) / 10])
    p = {"sender": sender, "contents": contents, "longest": r.randint(*longest), "weight": weight, "note": ""}
    p["answer"] = "standard-locker" if p["longest"] <= STANDARD_MAX else "large-locker"
    return p


IMPORTS = [  # (contents, longest range, weight range): light, ordinary goods of some value
    ("a designer handbag", (30, 40), (0.8, 1.5)),
    ("a mechanical wristwatch in a gift box", (12, 18), (0.3, 0.6)),
    ("a silk kimono", (30, 40), (0.4, 0.8)),
    ("a leather jacket", (40, 45), (1.5, 2.5)),
    ("a cashmere scarf", (25, 35), (0.2, 0.4)),
    ("a pair of designer trainers", (32, 38), (1.0, 1.6)),
    ("a rare first-edition book", (25, 32), (0.6, 1.2)),
    ("a handmade ceramic vase", (30, 40), (1.5, 3.0)),
    ("a handwoven wool blanket", (55, 70), (1.5, 2.5)),
]


def import_value(r):
    """Rule 3: from abroad with a declared value over £135: held for import VAT, even when no charge is mentioned."""
    contents, longest, weight = r.choice(IMPORTS)
    return parcel(r, r.choice(ABROAD), contents, longest, weight, declared(r, r.randint(140, 900)),
                  ("Paid in full at checkout.",))


def pharmacy(r):
    """Rule 4: anything sent by a pharmacy needs an ID check at the counter, even when small."""
    sender = r.choice(["Riverside Pharmacy", "Hale & Sons Chemists", "PillPost online pharmacy",
                       "the dispensary at St Anne's Health Centre", "Brackwell Community Pharmacy", "CarePlus Chemist"])
    contents, longest, weight = r.choice([
        ("hay-fever tablets", (10, 15), (0.1, 0.2)),
        ("a tube of hand cream", (12, 18), (0.1, 0.3)),
        ("vitamin D tablets", (10, 14), (0.1, 0.2)),
        ("plasters and bandages", (15, 22), (0.2, 0.5)),
        ("contact lens solution", (18, 25), (0.4, 0.9)),
        ("a repeat prescription", (12, 20), (0.1, 0.4)),
        ("a hot-water bottle", (30, 38), (0.4, 0.7)),
        ("sun cream and lip balm", (15, 22), (0.2, 0.5)),
    ])
    return parcel(r, sender, contents, longest, weight)


def live_animals(r):
    """Rule 5: live animals are not carried: return to sender."""
    return r.choice([
        parcel(r, "Scales & Tails Reptile Supplies", "live crickets for feeding a pet lizard", (12, 20), (0.1, 0.3)),
        parcel(r, "Scales & Tails Reptile Supplies", "a tub of live mealworms", (10, 15), (0.1, 0.3)),
        parcel(r, "Greenleaf Nursery", "live ladybird larvae for the garden", (10, 18), (0.1, 0.2)),
        parcel(r, "Honeycomb Apiaries", "a queen bee in a travel cage", (10, 14), (0.1, 0.1)),
        parcel(r, "Coral Corner Aquatics", "live tropical fish in a sealed bag", (25, 35), (1.5, 3.0)),
        parcel(r, "Greenleaf Nursery", "a box of live earthworms for a wormery", (20, 30), (0.5, 1.5)),
        parcel(r, "Coral Corner Aquatics", "live snails for an aquarium", (12, 18), (0.2, 0.5)),
    ])


def fresh(r):
    """Rule 6: cold lockers take parcels marked chilled or frozen only; other fresh goods go standard."""
    note = r.choice(["", "Perishable: please deliver today.", "Best collected within 2 days.",
                     "Store in a cool, dry place.", "Keep upright."])
    return r.choice([
        parcel(r, "Bloom & Stem Florists", "a bouquet of fresh roses", (35, 45), (0.8, 1.5), note),
        parcel(r, "Bloom & Stem Florists", "a bunch of fresh tulips", (35, 45), (0.5, 1.0), note),
        parcel(r, "Greenleaf Nursery", "a potted basil plant", (20, 30), (0.5, 1.2), note),
        parcel(r, "Sugar Lane Bakery", "a sourdough loaf baked this morning", (25, 35), (0.8, 1.2), note),
        parcel(r, "Orchard Lane Farm", "a box of fresh apples from the orchard", (30, 40), (2.5, 4.0), note),
        parcel(r, "Orchard Lane Farm", "fresh herbs cut this morning", (20, 30), (0.2, 0.4), note),
        parcel(r, "Orchard Lane Farm", "two punnets of fresh strawberries", (20, 28), (0.5, 1.0), note),
        parcel(r, "Greenleaf Nursery", "a small orchid in a pot", (25, 35), (0.8, 1.5), note),
    ])


KINDS = [  # (name, action, builder, count) -- counts are multiples of 6 so every split gets its share
    ("standard-locker", "standard-locker", standard, 12),
    ("large-locker", "large-locker", large, 12),
    ("cold-locker", "cold-locker", cold, 12),
    ("counter-pickup", "counter-pickup", counter, 12),
    ("id-check", "id-check", age_restricted, 12),
    ("return-to-sender", "return-to-sender", undeliverable, 12),
    ("hold-for-payment", "hold-for-payment", charge_due, 12),
    ("rule_lithium", "counter-pickup", lithium, 18),
    ("rule_overweight", "counter-pickup", overweight, 18),
    ("weight_light", None, weight_light, 12),  # rule 2 at or below its threshold: the action is the size's
    ("rule_import_value", "hold-for-payment", import_value, 12),
    ("rule_pharmacy", "id-check", pharmacy, 18),
    ("rule_live_animals", "return-to-sender", live_animals, 12),
    ("rule_fresh_not_chilled", "standard-locker", fresh, 18),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    seen: set[str] = set()
    dealt = 0
    for kind, action, build, count in KINDS:
        made = 0
        while made < count:
            p = build(r, made) if build is weight_light else build(r)
            description = describe(r, p)
            if description in seen:  # phrase lists are finite; never repeat a description word for word
                continue
            seen.add(description)
            splits[PATTERN[dealt % len(PATTERN)]].append({"description": description,
                                                          "action": action or p["answer"], "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"pl-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "description": i["description"], "action": i["action"],
                             "kind": i["kind"]}, ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
