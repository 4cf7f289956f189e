"""Generate the returns-desk items (train/selection/test JSONL) byte-identically.

    python data/tasks/returns-desk/generate.py [--out DIR]

Synthetic returns at the returns counter of "Harrow & Vale", a fictional department store in the
fictional town of Kestrel Bay: what does the counter do with this return? Each item (a purchase
line and the customer's message) is built from a kind (a plain outcome, one of six house rules or
a hard negative of one), filled from phrase lists with one random.Random(SEED); nothing else is
random. The house rules are in README.md; the seed skill does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20251219
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind
OUTCOMES = ("refund", "exchange", "store-credit", "repair", "refuse", "manufacturer", "manager")
LIMIT = 25000  # rule 1: a price over £250.00 (in pence) goes to the manager
WINDOW = 30  # rule 4: an electrical fault more than 30 days after purchase goes to the manufacturer
DISTRACT = (0, 2, 3)  # the n-th item of a kind that carries a rule's word: one each in train, selection, test
DISTRACT2 = (1, 4, 8)  # a second such set: one each in test, train, selection


def goods(group: str, *rows: tuple) -> list[dict]:
    """Products as dicts: (name, short name, lowest and highest price in pounds[, fault[, plural]])."""
    keys = ("name", "short", "low", "high", "fault", "plural")
    return [dict(zip(keys, row + ("", False)[len(row) - 4:]), group=group) for row in rows]


WEAR = goods("wear",
             ("wool jumper", "jumper", 35, 95, "A seam has come undone under one arm of {the}"),
             ("pair of jeans", "jeans", 40, 110, "The zip on {the} has broken", True),
             ("winter coat", "coat", 80, 230, "The zip on {the} has split at the bottom"),
             ("pair of leather boots", "boots", 70, 220, "The heel has come loose on one of {the}", True),
             ("linen shirt", "shirt", 25, 70, "The buttons keep falling off {the}"),
             ("summer dress", "dress", 30, 120, "The zip at the back of {the} has jammed"),
             ("pair of trainers", "trainers", 45, 140, "The sole of {the} is coming away at the toe", True),
             ("rain jacket", "jacket", 50, 160, "The zip on {the} has broken"),
             ("silk blouse", "blouse", 40, 130, "A seam has split at the shoulder of {the}"),
             ("wool scarf", "scarf", 15, 60),
             ("pair of leather gloves", "gloves", 20, 60, "The stitching has come apart on one of {the}", True))
HOME = goods("home",
             ("ceramic vase", "vase", 18, 90),
             ("set of six wine glasses", "glasses", 20, 70, "", True),
             ("framed print", "print", 25, 140, "The hanging wire has come away from {the}"),
             ("cast-iron casserole dish", "casserole dish", 45, 190),
             ("duvet cover set", "duvet cover set", 30, 110, "The poppers along the bottom of {the} have come off"),
             ("wall mirror", "mirror", 40, 200, "The hanging bracket has come off the back of {the}"),
             ("dinner set for four", "dinner set", 40, 160),
             ("bedside table", "bedside table", 60, 220, "The drawer of {the} has come off its runners"),
             ("cabin suitcase", "suitcase", 60, 220, "One of the wheels on {the} has jammed"),
             ("leather handbag", "handbag", 50, 230, "The strap of {the} has come away from the clasp"),
             ("backpack", "backpack", 30, 110, "A shoulder strap on {the} has torn at the seam"),
             ("non-stick frying pan", "frying pan", 20, 80))
ELEC = goods("elec",
             ("kettle", "kettle", 25, 90, "{The} no longer switches off by itself"),
             ("two-slice toaster", "toaster", 25, 90, "Only one side of {the} heats up"),
             ("hairdryer", "hairdryer", 20, 120, "{The} cuts out after about a minute"),
             ("pair of over-ear headphones", "headphones", 40, 230, "The left side of {the} has gone silent", True),
             ("table lamp", "lamp", 25, 140, "{The} flickers and then goes off"),
             ("coffee machine", "coffee machine", 60, 230, "{The} leaks water from underneath"),
             ("hand blender", "blender", 20, 70, "The motor of {the} stops after a few seconds"),
             ("steam iron", "iron", 25, 90, "{The} has stopped making steam"),
             ("bluetooth speaker", "speaker", 30, 160, "{The} won't charge any more"),
             ("digital radio", "radio", 30, 120, "{The} won't tune in to any station"),
             ("pair of hair straighteners", "straighteners", 30, 140, "One plate of {the} doesn't heat up", True),
             ("food mixer", "mixer", 60, 230, "The speed dial on {the} has stopped working"))
PRICEY = (goods("wear", ("cashmere coat", "coat", 260, 480, "A seam has split along the back of {the}"),
                ("men's wool suit", "suit", 260, 480, "The lining has torn inside the jacket of {the}"))
          + goods("home", ("leather armchair", "armchair", 380, 890, "One of the legs of {the} has worked loose"),
                  ("designer handbag", "handbag", 280, 640, "The clasp on {the} no longer closes"),
                  ("dinner service for twelve", "dinner service", 260, 390), ("wool rug", "rug", 270, 560),
                  ("goose-down duvet", "duvet", 260, 380, "The stitching on {the} is coming apart"))
          + goods("elec", ("55-inch television", "television", 300, 899, "A line has appeared on the screen of {the}"),
                  ("bean-to-cup coffee machine", "coffee machine", 280, 650, "{The} leaks water from underneath"),
                  ("stand mixer", "mixer", 270, 450, "The bowl of {the} no longer locks in place"),
                  ("smartwatch", "watch", 260, 420, "{The} won't hold a charge for more than an hour")))
NEAR = [p for p in WEAR + HOME + ELEC if p["high"] >= 200]  # goods that can cost £240 to £250
HYGIENE = (goods("body", ("swimsuit", "swimsuit", 20, 70), ("pair of swim shorts", "swim shorts", 15, 45, "", True),
                 ("bikini", "bikini", 20, 65), ("pack of boxer shorts", "boxer shorts", 12, 35, "", True),
                 ("bra", "bra", 18, 48), ("pack of three briefs", "briefs", 12, 30, "", True))
           + goods("face", ("lipstick", "lipstick", 12, 36), ("foundation", "foundation", 18, 42),
                   ("mascara", "mascara", 12, 30), ("eyeshadow palette", "palette", 20, 55))
           + goods("ears", ("pair of silver earrings", "earrings", 15, 90, "", True),
                   ("pair of gold stud earrings", "earrings", 30, 160, "", True),
                   ("pair of in-ear headphones", "headphones", 25, 180, "", True),
                   ("set of wireless earbuds", "earbuds", 40, 200, "", True)))
BREAKABLE = ("vase", "glasses", "casserole dish", "mirror", "dinner set", "print")

FIRST = ["Amelia", "Grace", "Priya", "Joanne", "Sofia", "Helen", "Aisha", "Daniel", "Tomasz", "James", "Kwame",
         "Luca", "Omar", "Rhys", "Yuki", "Ngozi", "Callum", "Megan"]
LAST = ["Novak", "Okafor", "Brennan", "Patel", "Moreau", "Nakamura", "Kowalski", "Mensah", "Ferreira", "Walsh",
        "Adeyemi", "O'Neill", "Haddad", "Hughes"]
OPENERS = ["", "", "", "", "Hi. ", "Hello. ", "Good morning. ", "Excuse me. ", "Returns form: ",
           "Said at the counter: ", "Hi, I hope you can help. ", "name"]
ENDINGS = ["", "", "", "Thanks.", "Thank you.", "Many thanks.", "Cheers.", "Sorry for the bother.",
           "I'm happy to wait.", "My phone number is on the form.", "I've got the bag it came in."]
STORE = ["in store", "in store", "in the Kestrel Bay store", "in the shop", "at a till in store"]
ORDERS = ["online order HV-{n}", "website order no. {n}", "ordered on the app, order {n}",
          "online, order number HV{n}"]
OTHER_SHOPS = ["Marlow's in Larchmont", "Pennyfield Home", "the Saturday market in Dunmore", "Carraway's",
               "a seller on an online marketplace"]
PENCE = [0, 0, 0, 99, 50, 95]
SIZES = ["a size bigger", "a size smaller", "the next size up", "the next size down", "a medium", "a large",
         "a small", "a size 12", "a size 14"]
COLOURS = ["navy", "black", "grey", "green", "cream", "red", "blue"]
BRANDS = ["Brava", "Calloway", "Nordholm", "Tessel", "Aldmoor", "Pinewick", "Lumen & Co"]
RECEIPT = ["I have the receipt here.", "Receipt attached.", "The receipt is in my email.", "I've got the receipt.",
           "Here's my receipt.", "I kept the receipt.", "I paid by card and have the receipt."]


# ------------------------------------------------------------ rendering

def cap(text: str) -> str:
    return text[0].upper() + text[1:]


def say(r: random.Random, p: dict, text: str, **extra) -> str:
    """A phrase about product p, its words agreeing with it ("the jeans are", "this kettle is")."""
    pl = p["plural"]
    the = f"{r.choice(['the', 'these' if pl else 'this', 'my'])} {p['short']}"
    words = {"the": the, "The": cap(the), "it": "them" if pl else "it", "sub": "they" if pl else "it",
             "It": "They" if pl else "It", "its": "their" if pl else "its", "is": "are" if pl else "is",
             "has": "have" if pl else "has", "does": "do" if pl else "does", "was": "were" if pl else "was"}
    return text.format(**words, **extra)


def money(pence: int) -> str:
    return f"£{pence // 100:,}.{pence % 100:02d}"


def ago(r: random.Random, days: int) -> str:
    """When it was bought or delivered, as a customer says it ("12 days ago", "3 weeks ago", "2 months ago")."""
    if days == 1:
        return r.choice(["yesterday", "1 day ago"])
    if days >= 365:
        return r.choice(["last year", "over a year ago"])
    if days > 90:
        return r.choice([f"{round(days / 30)} months ago", f"about {round(days / 30)} months ago"])
    forms = [f"{days} days ago"]
    if days % 7 == 0 and days <= 63:
        forms.append("a week ago" if days == 7 else f"{days // 7} weeks ago")
    if days % 30 == 0 and days >= 60:
        forms.append(f"{days // 30} months ago")
    return r.choice(forms)


def purchase(r: random.Random, it: dict) -> str:
    """The purchase line: what was bought, its price, when and how, in one of five layouts."""
    name, price, note = it["p"]["name"], money(it["price"]) + it["sale"], it["note"]
    if it["online"]:
        how, verb = it["online"], "delivered"
    elif it["other"]:
        how, verb = f"from {it['other']}", "bought"
    else:
        how, verb = r.choice(STORE), "bought"
    when = ago(r, it["days"])
    return [f"{cap(name)}, {price}, {verb} {when}, {how}{note}",
            f"{cap(name)} ({price}) - {how}, {when}{note}",
            f"Item: {name}; price: {price}; {verb} {when}, {how}{note}",
            f"{cap(how)}, {verb} {when}: {name}, {price}{note}",
            f"{cap(name)} - {price} - {how}, {when}{note}"][r.randrange(5)]


def wrap(r: random.Random, body: str) -> str:
    """A message around the body; the opener and ending never change the outcome."""
    opener = r.choice(OPENERS)
    if opener == "name":
        opener = f"{r.choice(FIRST)} {r.choice(LAST)} here. "
    return " ".join(x for x in (opener + body, r.choice(ENDINGS)) if x)


def new(r: random.Random, p: dict, days: int, price: int | None = None, online: bool = False, **kw) -> dict:
    """One return: the product, its price in pence, days since purchase, how it was bought."""
    if price is None:
        price = r.randint(p["low"], p["high"] - 1) * 100 + r.choice(PENCE)
    order = r.choice(ORDERS).format(n=r.randint(100000, 999999)) if online else ""
    return {"p": p, "days": days, "price": price, "online": order, "sale": "", "other": "", "note": "", **kw}


def finish(r: random.Random, it: dict, parts: list[str], ask: str, proof: bool = True) -> str:
    """The body: its sentences, sometimes a word about the receipt, and the customer's request."""
    extra = ""
    if proof and not it["other"] and r.random() < 0.4:
        extra = "The order confirmation is in my email." if it["online"] else r.choice(RECEIPT)
    if r.random() < 0.2:
        return " ".join(x for x in [ask, *parts, extra] if x)
    return " ".join(x for x in [*parts, extra, ask] if x)


# ------------------------------------------------------------ plain outcomes

REFUND_WHY = ["I've changed my mind about {the}.", "{The} {does}n't go with anything I own.",
              "I bought {the} on impulse and don't need {it}.", "It turns out I don't need {the} after all.",
              "{The} {is}n't what I expected once I got {it} home.", "I've decided I don't want {the} after all.",
              "My sister bought me the same thing the same week, so I don't need {the}.",
              "{The} {was} for a trip that's been cancelled."]
STATE_WEAR = ["{It} still {has} the tags on.", "{It} {has} never been worn.", "I haven't worn {it}; the labels are on."]
STATE_BOXED = ["{It} {is} still in the box, unused.", "Never used, still boxed.",
               "I haven't even taken {it} out of the packaging."]
REFUND_ASK = ["Could I have my money back?", "I'd like a refund to my card, please.", "Can I get a refund?",
              "I'd just like the money back, please.", "Please could you refund me?",
              "Can you put the money back on my card?", "I'd like a full refund."]


def refund_body(r: random.Random, it: dict, proof: bool = True, said: str = "") -> str:
    p = it["p"]
    state = r.choice(STATE_WEAR if p["group"] == "wear" else STATE_BOXED)
    return finish(r, it, [say(r, p, r.choice(REFUND_WHY)), said, say(r, p, state)], r.choice(REFUND_ASK), proof)


EX_WEAR = ["{The} {is} too small; could I swap {it} for {size}?", "{The} {is} too big. Can I change {it} for {size}?",
           "Could I exchange {the} for the same thing in {colour}?",
           "Wrong size, I'm afraid: I need {size}. Can I swap {the}?",
           "{The} {does}n't fit. Could I exchange {it} for {size}?", "I'd like {the} in {colour} instead, same size."]
EX_OTHER = ["I'd like to swap {the} for the {colour} one.",
            "I picked up the wrong model; I wanted the bigger version of {the}.",
            "Could I exchange {the} for the {colour} version?",
            "{The} {is} the wrong colour for our room; could I have {it} in {colour}?",
            "I meant to buy the larger size of {the}; can I swap {it}?",
            "{The} {is} smaller than I thought; could I change {it} for the next size up?"]
EX_ONLINE = ["{The} arrived this week but {is} too small; could I swap {it} for {size}?",
             "The parcel came and {the} {is} the wrong colour: I ordered {colour}. Can I exchange {it}?",
             "{The} came in the post and {does}n't fit. Could I have {size} instead?"]


def exchange_body(r: random.Random, it: dict, texts: list[str] | None = None, proof: bool = True,
                  said: str = "") -> str:
    p = it["p"]
    text = r.choice(texts or (EX_WEAR if p["group"] == "wear" else EX_OTHER))
    return finish(r, it, [said, say(r, p, text, size=r.choice(SIZES), colour=r.choice(COLOURS))], "", proof)


GIFT_WHY = ["{The} {was} a present and I already have one.",
            "I was given {the} for my birthday, but {sub} {is}n't me.",
            "{The} {was} a gift from my aunt and not my style at all.",
            "Someone gave me {the} for Christmas and I'll never use {it}.",
            "We were given {the} as a wedding present, twice.",
            "{The} {was} a leaving present from work; a lovely thought, but not for me."]
GIFT_ASK = ["Could I have a gift card instead?", "A voucher to spend in the store would be perfect.",
            "I'd rather have store credit than anything else.", "Could you put the value on a gift card for me?",
            "I don't want money back, just a credit note to spend here.", "Can I swap {it} for a voucher?"]


def gift_body(r: random.Random, it: dict) -> str:
    """An unwanted present, the customer asking for a voucher; the gift receipt is on the line or in the message."""
    p, where = it["p"], r.randrange(3)
    it["note"] = r.choice([" (gift receipt)", " (a present; gift receipt)"]) if where else ""
    said = r.choice(["I have the gift receipt.", "The gift receipt was in the box."]) if where != 1 else ""
    return " ".join(x for x in [say(r, p, r.choice(GIFT_WHY)), said, say(r, p, r.choice(GIFT_ASK))] if x)


FAULT_FORMS = ["{fault}.", "Unfortunately {fault_lc}.", "There's a problem: {fault_lc}.",
               "{fault}, though I've looked after {it} well.", "{It} {was} fine at first, but now {fault_lc}."]
REPAIR_ASK = ["Could you repair {it}?", "Can {sub} be fixed?", "I'd like {it} mended, please.",
              "Can you send {it} off to be repaired?", "Is it possible to get {it} repaired?",
              "I'd just like {it} fixed; I don't want a new one.", "Could someone fix {it} for me?"]


def fault_said(r: random.Random, p: dict) -> str:
    fault = say(r, p, p["fault"])
    return say(r, p, r.choice(FAULT_FORMS), fault=fault, fault_lc=fault[0].lower() + fault[1:])


def repair_body(r: random.Random, it: dict, proof: bool = True, said: str = "") -> str:
    return finish(r, it, [fault_said(r, it["p"]), said], say(r, it["p"], r.choice(REPAIR_ASK)), proof)


REFUSE = {"worn": ["I've worn {the} nearly every day since I bought {it} and {sub} {is} worn through now.",
                   "{The} {has} had a lot of wear and {is} looking very tired.",
                   "After a whole season of wear {the} {is} worn out."],
          "careless": ["I put {the} in the washing machine on a hot wash and {sub} shrank.",
                       "My dog chewed {the}.", "I spilled red wine on {the} and the stain won't come out.",
                       "I left {the} too close to the fire and {sub} scorched."],
          "dropped": ["I dropped {the} on the kitchen floor and {sub} cracked.",
                      "I knocked {the} off the shelf and {sub} broke.", "The children broke {the} playing football."],
          "other": ["I bought {the} at {other}, but you sell the same brand, so I've brought {it} here.",
                    "{The} came from {other}; they've closed, so I've brought {it} to you.",
                    "{The} {is} from {other}, but a friend said you'd take {it} back.",
                    "I got {the} from {other}; can you deal with {it} here?"]}
REFUSE_ASK = REFUND_ASK[:4] + REPAIR_ASK[:3] + ["Could I swap {it} for a new one?", "Can I have a replacement?"]


def refuse_body(r: random.Random, it: dict, how: str = "") -> str:
    """A return the plain reading refuses: worn out, damaged by the customer, or from another shop."""
    p = it["p"]
    how = how or r.choice(["other"] + (["worn", "careless"] if p["group"] == "wear" else [])
                          + (["dropped"] if p["short"] in BREAKABLE else []))
    if how == "other":
        it["other"] = r.choice(OTHER_SHOPS)
    elif how == "worn":
        it["days"] = max(it["days"], r.randint(150, 400))
    text = say(r, p, r.choice(REFUSE[how]), other=it["other"])
    return finish(r, it, [text], say(r, p, r.choice(REFUSE_ASK)))


MAKER_ASK = ["The box says {brand} gives a {years}-year guarantee on {the}. How do I claim on it?",
             "Is {the} still covered by {brand}'s own warranty, and who do I contact?",
             "I'd like to register {the} for the maker's guarantee; can you tell me how?",
             "How long is {brand}'s guarantee on {the}, and what does it cover?",
             "Can I claim on the manufacturer's warranty for {the}? {brand} says it lasts {years} years."]
MAKER_CLAIM = ["The leaflet says {brand} guarantees {it} for {years} years; can I claim with them?",
               "Can I use {brand}'s {years}-year guarantee for this? How do I contact them?",
               "Is this something the maker's warranty covers?"]


def maker_body(r: random.Random, it: dict) -> str:
    """A question about the brand's own guarantee; a fault only in goods that are not electrical."""
    p, brand, years = it["p"], r.choice(BRANDS), r.choice([2, 3, 5, 10])
    if p["fault"] and p["group"] != "elec" and r.random() < 0.5:
        return finish(r, it, [fault_said(r, p)], say(r, p, r.choice(MAKER_CLAIM), brand=brand, years=years))
    return finish(r, it, [], say(r, p, r.choice(MAKER_ASK), brand=brand, years=years))


MANAGER = ["The assistant who sold me {the} was really rude to me.",
           "I've been waiting at this counter for {mins} minutes and nobody has served me.",
           "I was charged twice for {the} and the person on the till didn't want to know.",
           "I rang about {the} three times and nobody ever called me back.",
           "The staff on the first floor laughed when I asked for help with {the}.",
           "I was told on the phone I could bring {the} back here, and now I'm told something different."]
MANAGER_ASK = ["I'd like to speak to the manager.", "I want to make a complaint.",
               "Can I see whoever is in charge, please?", "I want this taken further.",
               "Could I speak to a manager, please?", "I'm not happy with the service at all."]


def manager_body(r: random.Random, it: dict, texts: list[str] | None = None) -> str:
    text = say(r, it["p"], r.choice(texts or MANAGER), mins=r.choice([30, 40, 45, 50]))
    return finish(r, it, [text], r.choice(MANAGER_ASK), proof=False)


BODIES = {"refund": refund_body, "exchange": exchange_body, "store-credit": gift_body, "repair": repair_body,
          "refuse": refuse_body, "manufacturer": maker_body, "manager": manager_body}
DAYS = {"refund": (1, 40), "exchange": (1, 40), "store-credit": (3, 40), "repair": (3, 120), "refuse": (20, 400),
        "manufacturer": (10, 700), "manager": (1, 60)}


def plain(r: random.Random, outcome: str, pool: list[dict], price: int | None = None) -> dict:
    """An item whose plain reading gives outcome; an electrical fault is at most 9 days old (rule 4 stays out)."""
    p = r.choice([q for q in pool if q["fault"]] if outcome == "repair" else pool)
    low, high = (2, 9) if outcome == "repair" and p["group"] == "elec" else DAYS[outcome]
    online = outcome in ("refund", "exchange", "manufacturer") and r.random() < 0.2
    it = new(r, p, r.randint(low, high), price, online=online)
    it["body"] = BODIES[outcome](r, it)
    return it


SOLD = WEAR + HOME + ELEC


def refund(r, n):
    if n in DISTRACT:  # bought online and delivered intact: rule 6's words without its damage
        it = new(r, r.choice(WEAR + HOME), r.randint(2, 12), online=True)
        text = say(r, it["p"], "{The} arrived in perfect condition, but I've changed my mind.")
        it["body"] = finish(r, it, [text], r.choice(REFUND_ASK))
        return it
    if n in DISTRACT2:  # rule 2's goods, never opened: an ordinary refund
        it = new(r, r.choice(HYGIENE), r.randint(2, 20))
        text = r.choice(["{The} {is} still sealed in {its} packaging; I've decided I don't want {it}.",
                         "I never opened {the}; the cellophane is still on. I've changed my mind."])
        it["body"] = finish(r, it, [say(r, it["p"], text)], r.choice(REFUND_ASK))
        return it
    return plain(r, "refund", SOLD)


def exchange(r, n):
    if n in DISTRACT:  # bought in the sale, the wrong size: rule 3's words, but an exchange
        it = new(r, r.choice(WEAR), r.randint(2, 25), price=r.randint(15, 60) * 100 + r.choice(PENCE))
        it["body"] = exchange_body(r, it, said=on_sale(r, it))
        return it
    if n in DISTRACT2:  # bought online and delivered: rule 6's words, nothing damaged
        it = new(r, r.choice(WEAR), r.randint(1, 6), online=True)
        it["body"] = exchange_body(r, it, EX_ONLINE)
        return it
    return plain(r, "exchange", SOLD)


def store_credit(r, n):
    return plain(r, "store-credit", SOLD)


def repair(r, n):
    if n in DISTRACT:  # a fault long after purchase, but not electrical: rule 4 does not apply
        it = new(r, r.choice([p for p in WEAR + HOME if p["fault"]]), r.randint(40, 200))
        it["body"] = repair_body(r, it)
        return it
    if n in DISTRACT2:  # bought in the sale, then a fault: rule 3's words, but a repair
        it = new(r, r.choice([p for p in WEAR + HOME if p["fault"]]), r.randint(5, 25),
                 price=r.randint(15, 80) * 100 + r.choice(PENCE))
        it["body"] = repair_body(r, it, said=on_sale(r, it))
        return it
    return plain(r, "repair", SOLD)


def refuse(r, n):
    if n in DISTRACT:  # delivered intact, then broken by the customer: rule 6's words, refused
        p = r.choice([q for q in HOME if q["short"] in BREAKABLE])
        it = new(r, p, r.randint(5, 30), online=True)
        text = say(r, p, "{The} arrived in perfect condition, but then I knocked {it} off the table and {sub} broke.")
        it["body"] = finish(r, it, [text], say(r, p, r.choice(REFUSE_ASK)))
        return it
    return plain(r, "refuse", WEAR + HOME)


def manufacturer(r, n):
    return plain(r, "manufacturer", SOLD)


def manager(r, n):
    if n in DISTRACT:  # delivered, a complaint about the driver: rule 6's words, nothing damaged
        it = new(r, r.choice(SOLD), r.randint(1, 10), online=True)
        it["body"] = manager_body(r, it, ["The driver who delivered {the} was rude to my mother at the door.",
                                          "The courier who brought {the} swore at me on my own doorstep."])
        return it
    return plain(r, "manager", SOLD)


# ------------------------------------------------------------ house rules

OVER_ASKS = ("refund", "exchange", "repair", "store-credit", "manufacturer")
PRICE_OUTCOMES = ("refund", "exchange", "repair", "refund", "exchange", "repair", "store-credit", "exchange",
                  "refund", "refuse", "manufacturer", "refund")  # train 0 4 6 10, selection 2 8, test 1 3 5 7 9 11


def over_limit(r, n):
    """Rule 1: anything priced over £250 goes to the manager, whatever the customer asks for."""
    outcome = OVER_ASKS[n % 5]
    pool = [p for p in PRICEY if p["fault"] or outcome != "repair"]
    p = r.choice(pool)
    pounds = r.randint(250, 259) if n < 3 else r.randint(p["low"], p["high"] - 1)  # just over in every split
    pence = r.choice([50, 99]) if pounds == 250 else r.choice(PENCE)
    return plain(r, outcome, [p], pounds * 100 + pence)


def at_or_under(r, n):
    """Hard negative for rule 1: priced exactly £250 (in every split) or £240 to £249.99, plain outcome."""
    price = LIMIT if n < 3 else r.randint(240, 249) * 100 + r.choice(PENCE)
    outcome = PRICE_OUTCOMES[n]
    return plain(r, outcome, [p for p in NEAR if p["group"] != "elec"] if outcome == "refuse" else NEAR, price)


OPENED = {"body": ["I've taken {the} out of the packet and tried {it} on, but {sub} {is} too small.",
                   "I tried {the} on at home and the hygiene strip has come off; {sub} {does}n't fit.",
                   "I've opened {the} and tried {it} on, and {sub} {is} too big."],
          "face": ["I've opened {the} and tried {it} once; the shade is wrong for me.",
                   "The seal on {the} is broken because I tried {it}, but the colour doesn't suit me.",
                   "I opened {the} to test {it} and {sub} {is} far too dark for me."],
          "ears": ["I took {the} out of the box and tried {it} in, but {sub} {does}n't suit me.",
                   "I've opened {the} and worn {it} for one evening; not for me.",
                   "I unwrapped {the} and tried {it}, but I'd prefer a different style."]}
OPENED_ASK = {"body": ["Could I swap {it} for {size}?", "Can I exchange {it} for a different size?"],
              "face": ["Could I change {it} for a lighter shade?", "Can I swap {it} for another colour?"],
              "ears": ["Could I exchange {it} for the {colour} ones?", "Can I swap {it} for a different pair?"]}


def opened_hygiene(r, n):
    """Rule 2: opened earrings, swimwear, underwear, make-up or in-ear headphones are refused, even for an exchange."""
    p = r.choice(HYGIENE)
    it = new(r, p, r.randint(1, 20))
    asks = OPENED_ASK[p["group"]] * 2 + REFUND_ASK[:3]
    ask = say(r, p, r.choice(asks), size=r.choice(SIZES), colour=r.choice(["gold", "silver", "black", "white"]))
    it["body"] = finish(r, it, [say(r, p, r.choice(OPENED[p["group"]]))], ask)
    return it


SALE_LINE = [" (sale price)", ", reduced from {orig}", " in the winter sale", " (clearance)", " (reduced)",
             " (half price in the sale)"]
SALE_SAID = ["I got {it} in the winter sale.", "{It} {was} reduced when I bought {it}.",
             "I picked {it} up from the clearance rail.", "{It} {was} marked down in the sale.",
             "{It} {was} half price in the sale."]


def on_sale(r: random.Random, it: dict) -> str:
    """Mark the item as bought in the sale, on the purchase line or in the message; returns what the message says."""
    orig = money((it["price"] * 2 + 99) // 100 * 100)
    where = r.randrange(3)
    if where != 2:
        it["sale"] = r.choice(SALE_LINE).format(orig=orig)
    return say(r, it["p"], r.choice(SALE_SAID)) if where else ""


def sale(r, n):
    """Rule 3: bought in the sale and unwanted (money back asked for): store credit, not a refund."""
    p = r.choice([q for q in SOLD if q["low"] <= 110])
    it = new(r, p, r.randint(2, 25), price=r.randint(max(10, p["low"] // 2), min(109, p["high"] // 2 + 10)) * 100
             + r.choice(PENCE))
    it["body"] = refund_body(r, it, said=on_sale(r, it))
    return it


def fault_days(r: random.Random, n: int, old: bool) -> int:
    if old:  # more than 30 days: just over in every split, then weeks, months, a year
        return r.randint(WINDOW + 1, 40) if n < 3 else r.choice([42, 45, 49, 52, 56, 60, 63, 75, 90, 120, 180, 400])
    return WINDOW if n < 3 else r.randint(10, WINDOW - 1)  # exactly 30 days in every split


def electrical_fault(r: random.Random, n: int, old: bool) -> dict:
    p = r.choice(ELEC)
    it = new(r, p, fault_days(r, n, old), online=r.random() < 0.25)
    it["body"] = repair_body(r, it)
    return it


def old_fault(r, n):
    """Rule 4: a fault in an electrical item bought more than 30 days ago goes to the manufacturer."""
    return electrical_fault(r, n, True)


def recent_fault(r, n):
    """Hard negative for rule 4: the same faults 10 to 30 days after purchase: a repair."""
    return electrical_fault(r, n, False)


NO_RECEIPT = ["I've lost the receipt, I'm afraid.", "I paid cash and didn't keep the receipt.",
              "I don't have a receipt.", "I can't find the receipt anywhere.",
              "There's no receipt: I threw it away with the bag.", "I haven't got any proof of purchase, sorry.",
              "The receipt went through the wash."]


def no_receipt(r, n):
    """Rule 5: no receipt or proof of purchase: store credit, whatever the customer asks for."""
    outcome = ("refund", "exchange", "refund", "repair")[n % 4]
    p = r.choice([q for q in WEAR + HOME if q["fault"]] if outcome == "repair" else SOLD)
    it = new(r, p, r.randint(3, 40) if outcome != "repair" else r.randint(5, 60))
    where = r.randrange(4)
    if where:
        it["note"] = r.choice([" (no receipt)", ", paid cash, no receipt"] if where == 1 else [", paid cash", ""])
    said = r.choice(NO_RECEIPT) if where != 1 else ""
    body = {"refund": refund_body, "exchange": exchange_body, "repair": repair_body}[outcome](r, it, proof=False)
    it["body"] = " ".join(x for x in (body, said) if x) if r.random() < 0.5 else " ".join(x for x in (said, body) if x)
    return it


DAMAGE = {"vase": "{the} {was} cracked down one side", "glasses": "two of {the} were smashed",
          "print": "the glass in {the} was shattered", "casserole dish": "the lid of {the} was chipped",
          "mirror": "{the} {was} cracked across one corner", "dinner set": "three plates from {the} were in pieces",
          "bedside table": "one leg of {the} was snapped off", "suitcase": "{the} had a split in the shell",
          "frying pan": "{the} {was} badly dented"}
DAMAGE_FORMS = ["When I opened the parcel, {dmg}.", "The parcel arrived and {dmg}.",
                "I unpacked it as soon as it arrived and {dmg}.", "{Dmg} when it was delivered.",
                "It only came {when}, and {dmg}."]
DAMAGE_ASK = ["Could you send a replacement?", "Can I swap {it} for one that isn't damaged?",
              "Please could I have a new one?", "Could you fix {it} or send another?",
              "Can I exchange {it} for a perfect one?", "Could {sub} be repaired?"]


def delivery_damage(r, n):
    """Rule 6: an online order that arrived damaged is refunded, even when a replacement or repair is asked for."""
    p = r.choice([q for q in HOME if q["short"] in DAMAGE])
    it = new(r, p, r.randint(1, 5), online=True)
    dmg = say(r, p, DAMAGE[p["short"]])
    text = r.choice(DAMAGE_FORMS).format(dmg=dmg, Dmg=cap(dmg), when=ago(r, it["days"]))
    it["body"] = finish(r, it, [text], say(r, p, r.choice(DAMAGE_ASK)))
    return it


KINDS = [  # (name, outcome, builder, count) -- counts are multiples of 6 so every split gets its share
    ("refund", "refund", refund, 12),
    ("exchange", "exchange", exchange, 12),
    ("store-credit", "store-credit", store_credit, 12),
    ("repair", "repair", repair, 12),
    ("refuse", "refuse", refuse, 12),
    ("manufacturer", "manufacturer", manufacturer, 12),
    ("manager", "manager", manager, 12),
    ("rule_over_250", "manager", over_limit, 18),
    ("price_at_or_under", None, at_or_under, 12),  # rule 1 at or below its threshold: the plain outcome
    ("rule_opened_hygiene", "refuse", opened_hygiene, 12),
    ("rule_sale", "store-credit", sale, 12),
    ("rule_old_electrical_fault", "manufacturer", old_fault, 18),
    ("fault_within_30_days", "repair", recent_fault, 12),  # rule 4 within its window: a repair
    ("rule_no_receipt", "store-credit", no_receipt, 12),
    ("rule_damaged_in_delivery", "refund", delivery_damage, 12),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    seen: set[str] = set()
    dealt = 0
    for kind, outcome, build, count in KINDS:
        made = 0
        while made < count:
            it = build(r, made)
            message = wrap(r, it["body"])
            if message in seen:  # phrase lists are finite; never repeat a message word for word
                continue
            seen.add(message)
            answer = outcome or PRICE_OUTCOMES[made]
            splits[PATTERN[dealt % len(PATTERN)]].append({"purchase": purchase(r, it), "message": message,
                                                          "outcome": answer, "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"rd-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "purchase": i["purchase"], "message": i["message"],
                             "outcome": i["outcome"], "kind": i["kind"]}, ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
