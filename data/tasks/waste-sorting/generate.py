"""Generate the waste-sorting items (train/selection/test JSONL) byte-identically.

    python data/tasks/waste-sorting/generate.py [--out DIR]

Synthetic questions from residents of "Eastvale", a fictional town, to its waste service:
which bin or collection does this item go in? Each question is built from a kind (a plain
material or one of six house rules), filled from phrase lists with one random.Random(SEED);
nothing else is random. The house rules are in README.md; the seed skill does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20251107
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind
BINS = ("paper", "packaging", "glass", "organic", "residual", "hazardous", "electronics", "bulky")

OPENERS = ["", "", "", "Quick question: ", "Hello, ", "Hi! ", "Sorry if this is obvious: ",
           "Moving house and found this: ", "Clearing out the flat: ", "My neighbour and I disagree. "]
ENDINGS = ["", "", "Which bin?", "Where does this go?", "Which bin is right?", "Thanks for helping.",
           "I don't want to get it wrong.", "What do I do with this?"]
ROOMS = ["the kitchen", "the garage", "the attic", "the cellar", "the kids' room", "the garden shed", "the bathroom",
         "the office", "the balcony", "my late aunt's flat"]
COLOURS = ["green", "brown", "clear", "blue", "white", "black", "red", "grey"]
FOODS = ["tomato sauce", "spilled curry", "bacon fat", "melted cheese", "chocolate cake", "gravy", "cooking oil",
         "ketchup"]


def wrap(r: random.Random, text: str) -> str:
    """A resident's message around the description; never changes what the item is."""
    opener = r.choice(OPENERS)
    body = opener + (text[0].lower() + text[1:] if opener.endswith((": ", ", ")) else text)
    return " ".join(p for p in (body, r.choice(ENDINGS)) if p)


def cm(r: random.Random, low: int, high: int) -> tuple[int, str]:
    """A length in cm and how a resident might write it (cm, metres or a bare number)."""
    n = r.randint(low, high)
    shown = r.choice([f"{n} cm", f"{n}cm", f"{n} centimetres", f"{n / 100:.2f} m".replace(".00 m", " m"),
                      f"about {n} cm"])
    return n, shown


def where(r: random.Random) -> str:
    return r.choice(ROOMS)


# ------------------------------------------------------------ plain materials

def paper(r):
    return r.choice([
        ("newspapers", f"A stack of old newspapers from {where(r)}, dry and tied with string."),
        ("magazines", f"About {r.randint(10, 40)} glossy magazines, clean and dry."),
        ("envelopes", "A bundle of opened envelopes, some with little plastic windows."),
        ("egg carton", f"An empty egg carton for {r.choice([6, 10, 12])} eggs, made of grey pressed cardboard."),
        ("paper shopping bag", "A brown paper shopping bag from the bakery, empty and clean."),
        ("exercise books", f"Old school exercise books from {where(r)}, written in with pencil."),
        ("printer paper", f"A pile of printed office paper, {r.randint(50, 300)} sheets, staples still in."),
        ("cereal box", "An empty cereal box, flattened, the plastic inner bag already taken out."),
        ("toilet roll tubes", f"{r.randint(5, 20)} cardboard toilet roll tubes collected for a craft that never happened."),
        ("wrapping paper", f"Plain {r.choice(COLOURS)} wrapping paper from presents, no foil or glitter."),
    ])


def packaging(r):
    return r.choice([
        ("yoghurt pots", f"{r.randint(2, 8)} empty plastic yoghurt pots, rinsed, lids taken off."),
        ("tin cans", f"Rinsed tin cans from {r.choice(['tomatoes', 'beans', 'soup', 'cat food', 'peaches'])}."),
        ("drinks carton", f"An empty {r.choice(['orange juice', 'milk', 'oat drink', 'apple juice'])} carton."),
        ("crisps bag", "An empty crisps bag, the shiny kind that is plastic and foil."),
        ("shampoo bottle", f"An empty {r.choice(COLOURS)} plastic shampoo bottle."),
        ("bubble wrap", "Bubble wrap and plastic air cushions from an online order."),
        ("cling wrap", "The plastic film that was wrapped around "
                       f"{r.choice(['a cucumber', 'a tray of mushrooms', 'sliced cheese', 'a pack of kitchen roll'])}."),
        ("bottle caps", f"A jar full of metal bottle caps, about {r.randint(20, 90)} of them."),
        ("aerosol can", f"An empty {r.choice(['deodorant', 'hairspray', 'whipped cream'])} spray can, nothing left inside."),
        ("foil tray", "An aluminium takeaway tray, scraped clean."),
    ])


def glass(r):
    colour = r.choice(["green", "brown", "clear"])
    return r.choice([
        ("wine bottles", f"{r.randint(2, 9)} empty {colour} wine bottles."),
        ("jam jars", f"Empty jam jars with the lids taken off, {colour} glass."),
        ("olive oil bottle", f"An empty {colour} glass olive oil bottle."),
        ("baby food jars", f"{r.randint(3, 12)} small glass baby food jars, rinsed."),
        ("perfume bottle", "An empty perfume bottle made of thick glass, the spray top unscrewed."),
        ("pickle jar", f"A big empty {colour} glass jar that held pickled gherkins."),
        ("sauce bottle", f"An empty {colour} glass bottle of {r.choice(['soy sauce', 'vinegar', 'ketchup'])}."),
    ])


def organic(r):
    return r.choice([
        ("banana peels", "Banana peels and apple cores from the fruit bowl."),
        ("coffee grounds", f"Used coffee grounds from the espresso machine, {r.choice(['a week', 'a month', 'a fortnight'])}'s worth."),
        ("eggshells", f"Eggshells from {r.randint(4, 12)} eggs."),
        ("grass cuttings", f"Grass cuttings from mowing the lawn, {r.randint(1, 4)} bags."),
        ("wilted flowers", f"Wilted {r.choice(['tulips', 'roses', 'sunflowers', 'daisies'])} from a vase."),
        ("stale bread", f"{r.choice(['Half a loaf', 'Two rolls', 'A baguette'])} of stale bread."),
        ("potato peelings", "Potato and carrot peelings from cooking dinner."),
        ("autumn leaves", f"Leaves raked up from {r.choice(['the garden', 'the front path', 'the courtyard'])}."),
        ("tea leaves", "Loose tea leaves left in the teapot."),
    ])


def residual(r):
    return r.choice([
        ("nappies", "Used disposable nappies."),
        ("vacuum cleaner bag", f"A full vacuum cleaner bag from {where(r)}."),
        ("cigarette ends", "An ashtray full of cigarette ends."),
        ("cat litter", "Used clumping cat litter."),
        ("chewing gum", "Chewing gum wrapped in a scrap of its wrapper."),
        ("sweepings", f"Dust and grit swept up from {where(r)}."),
        ("sticking plasters", "Used sticking plasters and cotton pads."),
    ])


def hazardous(r):
    return r.choice([
        ("batteries", f"{r.randint(4, 20)} loose used {r.choice(['AA', 'AAA', '9-volt', 'C'])} batteries."),
        ("paint", f"A {r.choice(['half-full', 'nearly full', 'two-thirds full'])} tin of {r.choice(COLOURS)} wall paint."),
        ("motor oil", "A canister with old motor oil drained from the lawnmower."),
        ("weed killer", f"A bottle of weed killer, {r.choice(['half', 'a quarter', 'most'])} of it left."),
        ("nail polish remover", f"An almost full bottle of nail polish remover from {where(r)}."),
        ("energy-saving bulb", "A burnt-out compact fluorescent energy-saving bulb."),
        ("thermometer", "An old mercury fever thermometer."),
        ("button cells", f"A handful of used button cell batteries from {where(r)}."),
        ("paint thinner", f"Leftover paint thinner in its original bottle, found in {where(r)}."),
        ("pool chlorine", "A tub of pool chlorine tablets we no longer need."),
    ])


def electronics(r):
    return r.choice([
        ("toaster", f"An old toaster from {where(r)} that stopped heating."),
        ("mobile phone", f"A broken {r.choice(['Android', 'flip', 'old'])} mobile phone with a cracked screen."),
        ("laptop", f"A {r.randint(6, 14)}-year-old laptop that no longer starts."),
        ("kettle", f"An electric kettle, {r.choice(COLOURS)}, the switch is broken."),
        ("hair dryer", "A hair dryer that smells of burning when switched on."),
        ("keyboard", "A computer keyboard with a few keys missing."),
        ("microwave", "A small microwave oven that sparks inside."),
        ("printer", f"An inkjet printer from {where(r)}, it jams on every page."),
    ])


def bulky(r):
    return r.choice([
        ("sofa", f"A {r.choice(['two', 'three'])}-seater sofa with a broken spring."),
        ("mattress", f"An old {r.choice(['single', 'double'])} mattress."),
        ("wardrobe", "A wardrobe that we took apart, the side panels and doors."),
        ("bed frame", "A wooden bed frame, dismantled."),
        ("armchair", "A worn-out armchair with torn upholstery."),
        ("dining table", "A dining table and its legs, screwed off."),
    ])


# ------------------------------------------------------------ house rules

def hidden_electronics(r):
    """Rule 1: a built-in battery, cable or plug makes it electronics, whatever it looks like."""
    power = r.choice(["there is a small battery inside", "it has a built-in battery", "it charges with a USB cable",
                      "a coin cell battery is built in", "it runs on a battery you cannot take out",
                      "it has a little rechargeable battery"])
    return r.choice([
        ("birthday card", f"A birthday card that plays a song when you open it; {power}."),
        ("light-up trainers", f"Children's trainers with flashing lights in the soles; {power}."),
        ("toothbrush", f"An old electric toothbrush; {power}."),
        ("tea lights", f"{r.randint(4, 12)} LED tea-light candles made of plastic; {power}."),
        ("teddy bear", f"A plush teddy bear that talks when you press its paw; {power}."),
        ("insoles", f"Heated shoe insoles; {power}."),
        ("water bottle", f"A 'smart' plastic water bottle that reminds you to drink; {power}."),
        ("vape", f"A used disposable vape; {power}."),
        ("christmas jumper", f"A Christmas jumper with little lights knitted into it; {power}."),
        ("paper lantern", f"A paper lantern with a string of tiny LEDs inside; {power}."),
        ("fly swatter", f"An electric fly swatter shaped like a tennis racket; {power}."),
    ])


OVERSIZE = [  # (item, description with {size}, bin when it is not over 120 cm) -- the material decides below
    ("cardboard box", "A flattened cardboard box from a new {thing}, {size} long.", "paper"),
    ("cardboard tube", "A long cardboard tube that a {roll} was rolled on, {size} long.", "paper"),
    ("polystyrene packaging", "Polystyrene packaging from a {thing} delivery, the biggest piece {size} long.",
     "packaging"),
    ("cardboard sheets", "Sheets of corrugated cardboard that protected a {thing} in transit, {size} long.", "paper"),
]
THINGS = ["wardrobe", "fridge", "television", "bookcase", "bicycle", "desk", "washing machine", "garden bench"]
ROLLS = ["carpet", "roll of vinyl flooring", "poster", "roll of wallpaper", "garden fleece"]


def oversize(r):
    """Rule 2: longest side over 120 cm goes to bulky, whatever the material (rule 1 first)."""
    _, shown = cm(r, 121, 260)
    return r.choice([
        *[(item, text.format(size=shown, thing=r.choice(THINGS), roll=r.choice(ROLLS)))
          for item, text, _ in OVERSIZE],
        ("garden trellis", f"A wooden garden trellis, {shown} tall."),
        ("rug", f"A rolled-up wool rug, {shown} long."),
        ("paddling pool", f"A rigid plastic paddling pool, {shown} across, cracked."),
        ("artificial christmas tree", f"An artificial Christmas tree, plastic, {shown} tall."),
        ("curtain rail", f"An old metal curtain rail, {shown} long."),
        ("ladder", f"A wooden stepladder with a broken rung, {shown} high."),
    ])


def oversize_small(r) -> tuple[str, str, str]:
    """Hard negative for rule 2: 120 cm or less goes by material (the threshold from both sides)."""
    item, text, bin_ = r.choice(OVERSIZE)
    _, shown = cm(r, 30, 120) if r.random() < 0.75 else (120, r.choice(["120 cm", "1.20 m", "exactly 120 cm"]))
    return item, text.format(size=shown, thing=r.choice(THINGS), roll=r.choice(ROLLS)), bin_


def soiled_paper(r):
    """Rule 3: paper or cardboard soiled with food or grease goes to organic, not paper."""
    food = r.choice(FOODS)
    return r.choice([
        ("pizza box", f"A pizza box with grease stains and some {r.choice(['cheese', 'crust', 'sauce'])} stuck to it."),
        ("paper napkins", f"Used paper napkins from dinner, smeared with {food}."),
        ("kitchen roll", f"Kitchen roll I used to wipe up {food}."),
        ("paper plates", f"Paper plates from a party, with {food} on them."),
        ("muffin cases", "Paper muffin cases with crumbs and batter stuck inside."),
        ("chip paper", "The paper bag my chips came in, soaked through with oil."),
        ("butter wrapper", "A paper butter wrapper with butter still on it."),
        ("cake board", f"A cardboard cake board covered in {r.choice(['icing', 'cream', 'chocolate'])}."),
    ])


def nonbottle_glass(r):
    """Rule 4: only bottles and jars go to glass; other glass and ceramics go to residual."""
    _, small = cm(r, 20, 90)
    return r.choice([
        ("drinking glass", f"A drinking glass that broke in {where(r)}."),
        ("wine glasses", f"{r.randint(2, 6)} wine glasses with chipped rims."),
        ("mirror", f"A small bathroom mirror, {small} wide, cracked."),
        ("window pane", f"A pane of window glass from a cold frame, {small} wide."),
        ("oven dish", "A heat-proof glass oven dish that cracked in the oven."),
        ("light bulb", "An old-fashioned incandescent light bulb that has blown."),
        ("vase", f"A {r.choice(COLOURS)} glass flower vase with a crack."),
        ("mug", "A chipped ceramic coffee mug."),
        ("saucepan lid", "The glass lid of a saucepan, the handle came off."),
        ("porcelain plate", f"{r.randint(2, 6)} broken porcelain dinner plates."),
    ])


def nonpackaging_plastic(r):
    """Rule 5: the packaging bin takes packaging only; plastic objects go to residual."""
    return r.choice([
        ("bucket", "A cracked plastic bucket."),
        ("toothbrush", "A manual plastic toothbrush, worn out."),
        ("toy figures", f"A box of plastic toy figures from {where(r)}, no batteries in any of them."),
        ("cds", f"{r.randint(5, 40)} old CDs and DVDs."),
        ("cutting board", "A scratched plastic cutting board."),
        ("hangers", f"{r.randint(5, 30)} plastic clothes hangers."),
        ("watering can", "A plastic watering can with a split seam."),
        ("ballpoint pens", "A mug of dried-out plastic ballpoint pens."),
        ("garden hose", "A short piece of garden hose, cut off where it leaked."),
    ])


def compostable(r):
    """Rule 6: compostable and bioplastic items go to residual: the composting plant rejects them."""
    label = r.choice(["labelled 'compostable'", "marked 'biodegradable'", "made of bioplastic (PLA)",
                      "printed with 'home compostable'", "sold as plant-based and compostable"])
    return r.choice([
        ("coffee cup", f"A takeaway coffee cup {label}."),
        ("bin liners", f"Bin liners {label}."),
        ("cutlery", f"Takeaway forks and knives {label}."),
        ("dog poo bags", f"A roll of dog poo bags {label}, never used."),
        ("coffee capsules", f"Used coffee capsules {label}."),
        ("straws", f"Drinking straws {label}."),
        ("fruit net", f"The net bag that oranges came in, {label}."),
    ])


KINDS = [  # (name, bin, builder, count) -- counts are multiples of 6 so every split gets its share
    ("paper", "paper", paper, 12),
    ("packaging", "packaging", packaging, 12),
    ("glass", "glass", glass, 12),
    ("organic", "organic", organic, 12),
    ("residual", "residual", residual, 6),
    ("hazardous", "hazardous", hazardous, 12),
    ("electronics", "electronics", electronics, 12),
    ("bulky", "bulky", bulky, 6),
    ("rule_hidden_electronics", "electronics", hidden_electronics, 18),
    ("rule_oversize", "bulky", oversize, 18),
    ("oversize_small", None, oversize_small, 12),  # rule 2 below its threshold: the bin is the material's
    ("rule_soiled_paper", "organic", soiled_paper, 18),
    ("rule_nonbottle_glass", "residual", nonbottle_glass, 18),
    ("rule_nonpackaging_plastic", "residual", nonpackaging_plastic, 12),
    ("rule_compostable", "residual", compostable, 12),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    dealt = 0
    for kind, bin_, build, count in KINDS:
        seen: set[str] = set()
        made = 0
        while made < count:
            built = build(r)
            item, text = built[0], built[1]
            answer = bin_ or built[2]
            details = wrap(r, text)
            if details in seen:  # phrase lists are finite; never repeat a question word for word
                continue
            seen.add(details)
            splits[PATTERN[dealt % len(PATTERN)]].append({"item": item, "details": details, "bin": answer,
                                                          "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"ws-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "item": i["item"], "details": i["details"], "bin": i["bin"],
                             "kind": i["kind"]}, ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
