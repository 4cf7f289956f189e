"""Generate the ticket-routing items (train/selection/test JSONL) byte-identically.

    python data/tasks/ticket-routing/generate.py [--out DIR]

Synthetic support tickets for "Lumen", an online shop for smart-home devices with an
app subscription. Each ticket is built from a kind (a plain topic or one of five house
rules), filled from phrase lists with one random.Random(SEED); nothing else is random.
The house rules are in README.md; the seed skill does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20240611
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind

PRODUCTS = ["Lumen Hub 2", "Aero smart plug", "Vela robot vacuum", "Orbit 4K camera", "Halo video doorbell",
            "Nimbus air purifier", "Pulse earbuds", "Terra thermostat", "Lumen light strip", "Beacon motion sensor",
            "Aero smart plug 4-pack", "Vela mop station", "Orbit outdoor camera", "Halo chime"]
BIG_PRODUCTS = ["Vela robot vacuum", "Vela mop station", "Nimbus air purifier", "Orbit camera kit (4 cameras)",
                "Lumen whole-home bundle", "Terra thermostat pro bundle", "Halo security kit", "Orbit 4K camera 3-pack"]
NAMES = ["Anna Keller", "Tom Becker", "Sofia Rossi", "Lukas Meyer", "Emma Dubois", "Noah Jansen", "Mia Novak",
         "Jonas Berg", "Lea Fischer", "Mateo Garcia", "Chloe Martin", "Finn Olsen", "Ines Moreau", "Paul Wagner",
         "Nora Lindqvist", "David Kowalski", "Clara Weber", "Luca Bianchi", "Hannah Vos", "Elias Svensson"]
CARRIERS = ["DHL", "DPD", "UPS", "GLS", "Hermes", "PostNL", "La Poste"]
CITIES = ["Berlin", "Hamburg", "Vienna", "Munich", "Lyon", "Rotterdam", "Milan", "Zurich", "Cologne", "Graz"]
GREET = ["Hi,", "Hello,", "Hello Lumen team,", "Dear support,", "Hi there,", "Good morning,", "", ""]
SIGN = ["Thanks", "Best regards", "Kind regards", "Cheers", "Thank you", "Regards"]
REGULATIONS = ["GDPR", "the GDPR", "Art. 15 GDPR", "Article 17 GDPR", "the CCPA", "CCPA", "PSD2",
               "the data protection act", "data protection law", "DSGVO", "the EU data protection rules"]


def order_no(r: random.Random) -> str:
    return r.choice(["order #", "order no. ", "order LM-", "order "]) + str(r.randint(100000, 999999))


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def money(r: random.Random, amount: int) -> str:
    return r.choice([f"€{amount}", f"{amount} EUR", f"{amount},00 €", f"EUR {amount}.00", f"{amount} euros",
                     f"€{amount:,}.00" if amount >= 1000 else f"€{amount}.00"])


def wrap(r: random.Random, body: str) -> str:
    greet, name = r.choice(GREET), r.choice(NAMES)
    return " ".join(p for p in (greet, body, f"{r.choice(SIGN)}, {name}") if p)


def pick(r: random.Random, options: list) -> str:
    return r.choice(options)


# ------------------------------------------------------------ plain topics

def billing(r):
    p, o = pick(r, PRODUCTS), order_no(r)
    amount = r.randint(9, 480)
    return pick(r, [
        ("Charged twice", f"My card was charged twice for {o} ({money(r, amount)} each time). Please remove the duplicate charge."),
        ("Invoice copy needed", f"Could you send me a PDF invoice for {o}? Our accounting needs it with our company VAT number."),
        ("Payment failed", f"My payment for the {p} keeps getting declined even though the card works everywhere else."),
        ("Update card for subscription", "How do I change the credit card used for my Lumen Plus subscription? The old one expires this month."),
        ("Coupon not applied", f"I used the code SPRING15 at checkout but the discount is missing from {o}."),
        ("Why did my subscription price go up?", f"My Lumen Plus plan was billed at {money(r, r.choice([6, 8, 12]))} this month instead of the usual price. Why?"),
        ("Wrong VAT on invoice", f"The invoice for {o} shows 21% VAT but I live in Germany. Can you correct it?"),
        ("Pay by bank transfer?", f"Can I pay {o} by bank transfer instead of card? I'm ordering for our office."),
        ("Cancelled order still charged", f"I cancelled {o} an hour after ordering but {money(r, amount)} was still taken from my account."),
    ])


def technical(r):
    p = pick(r, PRODUCTS)
    return pick(r, [
        (f"{p} won't connect", f"My {p} does not show up in the app anymore. I reset it twice and it still won't pair over Wi-Fi."),
        ("App crashes on start", f"Since the last update the Lumen app crashes immediately when I open it. Phone: {pick(r, ['Pixel 7', 'iPhone 13', 'Galaxy S22', 'iPhone SE'])}."),
        ("Firmware update stuck", f"The firmware update for my {p} has been stuck at 60% for hours. Is it safe to unplug it?"),
        (f"{p} goes offline every night", f"The {p} drops offline every night around 2am and only comes back after a power cycle."),
        ("Automations not running", "My scheduled automations stopped running. The lights no longer turn on at sunset even though the rule is enabled."),
        ("Camera feed black", f"The live view of my {p} is just a black screen, although recordings still appear in the timeline."),
        ("API returns error 500", "Our integration gets HTTP 500 from the devices endpoint since yesterday. Token is valid. Any outage?"),
        ("Bluetooth pairing fails", f"Pairing the {p} over Bluetooth fails with error E-203 every time."),
        ("Battery drains fast", f"The battery of my {p} is empty after one day, it used to last a week."),
    ])


def account(r):
    return pick(r, [
        ("Change my email address", "I'd like to change the email address on my Lumen account to my new work address. How do I do that?"),
        ("Merge two accounts", "I accidentally created two accounts with different emails. Can you merge them so my devices are in one place?"),
        ("Update my name", "I got married and want to update the name on my account. The profile page doesn't let me edit it."),
        ("Add family member", "How can I give my partner access to our home in the app without sharing my login?"),
        ("Too many notification emails", "Please stop the marketing newsletters. I only want order emails. Where is that setting?"),
        ("Close my account", "I no longer use Lumen products. Please close my account."),
        ("Transfer devices to new owner", "I sold my house with the devices installed. How do I remove them from my account for the new owner?"),
    ])


def shipping(r):
    o, c, city = order_no(r), pick(r, CARRIERS), pick(r, CITIES)
    return pick(r, [
        ("Where is my order?", f"{cap(o)} was supposed to arrive on {pick(r, ['Monday', 'Tuesday', 'Friday'])} and the tracking hasn't moved for four days."),
        ("Tracking not updating", f"The {c} tracking for {o} still says 'label created' after a week."),
        ("Change delivery address", f"Can I still change the delivery address for {o}? I'm moving to {city} next week."),
        ("Parcel delivered to neighbour?", f"{c} says {o} was delivered but nothing is here. Maybe it went to a neighbour?"),
        ("Missing item in parcel", f"My parcel for {o} arrived but the {pick(r, PRODUCTS)} was missing from the box."),
        ("Express shipping to " + city, f"Do you offer express delivery to {city}? I need the {pick(r, PRODUCTS)} by Saturday."),
        ("Wrong item delivered", "I ordered the {} but received the {} instead ({}).".format(*r.sample(PRODUCTS, 2), o)),
    ])


def legal_plain(r):
    return pick(r, [
        ("Trademark complaint", "A seller on your marketplace uses our registered trademark 'Brightnest' in their listings. Please have it removed."),
        ("Subpoena for records", "We are counsel for a party in a civil case and need to serve a subpoena on Lumen. Where should it be sent?"),
        ("Warranty claim refused - considering court", "You refused my statutory warranty claim. My lawyer says I can take you to small claims court."),
        ("Terms of service question", "Which court has jurisdiction under your terms of service for disputes with business customers?"),
        ("Patent notice", "Our company holds a patent on the pairing method used by your hub. Please forward this notice to your legal team."),
    ])


# ------------------------------------------------------------ house rules

def refund_small(r):
    """Hard negative for rule 2: a refund of 500 EUR or less stays in billing."""
    p, o = pick(r, PRODUCTS), order_no(r)
    amount = r.choice([19, 35, 49, 79, 99, 129, 149, 199, 249, 299, 349, 399, 450, 480, 499, 500])
    return pick(r, [
        ("Refund for returned item", f"I sent back the {p} from {o} two weeks ago. Please refund the {money(r, amount)}."),
        ("Refund request", f"I changed my mind about the {p} ({o}), it's unopened. Can I get my {money(r, amount)} back?"),
        ("Still waiting for refund", f"You confirmed the return of {o} but the refund of {money(r, amount)} hasn't reached my card."),
    ])


def regulation(r):
    """Rule 1: naming a regulation sends the ticket to legal, whatever its topic."""
    reg, p, o = pick(r, REGULATIONS), pick(r, PRODUCTS), order_no(r)
    return pick(r, [
        ("Delete my data", f"Please delete my account and all personal data you hold, as required by {reg}."),
        ("Copy of my data", f"Under {reg} I request a copy of all data your app has collected about me, including camera metadata."),
        ("Payment authentication", f"Your checkout skipped strong customer authentication for {o}. Isn't that required by {reg}? My bank flagged it."),
        (f"{p} sends data abroad?", f"My router shows the {p} talking to servers outside the EU. Is that allowed under {reg}?"),
        ("Invoice shows my full address to others", f"The shared family invoice for {o} shows my address to other members. I think that breaks {reg}."),
        ("Marketing emails after opt-out", f"I opted out twice and still get newsletters. This is a violation of {reg}; please confirm what data you store."),
        ("Camera recordings retention", f"How long do you keep recordings from my {p}? I need this answered under {reg}."),
        ("Delivery driver photo of my door", f"The {pick(r, CARRIERS)} driver photographed my front door and it shows up in your app. Is that compliant with {reg}?"),
    ])


def refund_big(r):
    """Rule 2: a refund above 500 EUR goes to escalations, whatever the topic."""
    p, o = pick(r, BIG_PRODUCTS), order_no(r)
    amount = r.choice([501, 549, 589, 629, 649, 699, 749, 799, 849, 899, 999, 1099, 1249, 1499, 1890])
    return pick(r, [
        (f"{p} stopped working - refund", f"The {p} ({o}) died after three weeks and support couldn't fix it. I want a refund of {money(r, amount)}."),
        ("Refund please", f"I returned the {p} from {o}. Please refund the full {money(r, amount)}."),
        ("Charged for cancelled bundle", f"I cancelled {o} ({p}) but was charged {money(r, amount)}. Please refund it."),
        (f"{p} doesn't work with my setup", f"The {p} isn't compatible with my heating system after all. I'd like to return it and get my {money(r, amount)} back."),
        ("Refund for defective units", f"Two of the units in {o} are defective (firmware error E-17). Refund the whole order, {money(r, amount)}."),
    ])


def repeat_contact(r):
    """Rule 3: a customer writing again about an open ticket goes to escalations."""
    ticket = r.choice(["ticket #", "case ", "ticket ", "request #", "ticket no. "]) + str(r.randint(20000, 99999))
    p, o = pick(r, PRODUCTS), order_no(r)
    return pick(r, [
        (f"Re: {ticket}", f"This is my third message about {ticket}. My {p} still won't connect and nobody has replied."),
        ("Still no answer", f"I wrote last week ({ticket}) about the double charge on {o}. Still nothing. Please help."),
        (f"Following up on {ticket}", f"Following up on {ticket}: the parcel for {o} is still missing. You promised a call back."),
        ("Second time asking", f"Second time asking about the invoice correction for {o} - see {ticket}. When will it be fixed?"),
        ("No reply for 10 days", f"I opened {ticket} ten days ago about my account email change and have heard nothing since."),
    ])


def lockout(r):
    """Rule 4: password, login and 2FA problems go to account, not technical."""
    phone = pick(r, ["iPhone", "Android phone", "Pixel", "Samsung"])
    return pick(r, [
        ("Can't log in", "The app says my password is wrong, and the reset email never arrives. I'm locked out."),
        ("2FA code not arriving", "I don't receive the two-factor SMS code anymore, so I can't sign in to the app."),
        ("Lost phone with authenticator", f"My {phone} with the authenticator app was stolen. How do I get back into my Lumen account?"),
        ("Account locked after update", "After the app update it logged me out and now says 'account locked, too many attempts'."),
        ("Password reset link expired", "Every password reset link I get says it has expired when I click it. I can't log in at all."),
        ("Login error on web dashboard", "The web dashboard shows 'invalid credentials' with the same password that worked yesterday."),
        ("New phone - can't verify", f"I moved to a new {phone} and the 2FA codes from the old one don't work. Please help me log in."),
    ])


def damaged(r):
    """Rule 5: damaged in transit goes to shipping, even with a refund of 500 EUR or less."""
    p, o, c = pick(r, PRODUCTS), order_no(r), pick(r, CARRIERS)
    amount = r.choice([29, 49, 59, 89, 119, 149, 179, 229, 279, 329, 399, 449, 489])
    return pick(r, [
        (f"{p} arrived broken", f"The box for {o} was crushed and the {p} inside has a cracked housing. I'd like a refund of {money(r, amount)}."),
        ("Damaged delivery", f"{c} delivered {o} with the package soaked and torn, the {p} doesn't turn on. Refund or replacement please."),
        ("Screen cracked on arrival", f"My {p} came with a cracked screen, the outer box was dented. Can you send a new one?"),
        ("Parcel damaged in transport", f"The {p} ({o}) rattles and a piece is broken off - clearly dropped in transport. Please refund {money(r, amount)}."),
    ])


KINDS = [  # (name, queue, builder, count) — counts are multiples of 6 so every split gets its share
    ("billing", "billing", billing, 24),
    ("technical", "technical", technical, 24),
    ("account", "account", account, 12),
    ("shipping", "shipping", shipping, 18),
    ("legal", "legal", legal_plain, 6),
    ("refund_small", "billing", refund_small, 12),
    ("rule_regulation", "legal", regulation, 18),
    ("rule_refund_over_500", "escalations", refund_big, 18),
    ("rule_repeat_contact", "escalations", repeat_contact, 12),
    ("rule_lockout", "account", lockout, 18),
    ("rule_damaged_in_transit", "shipping", damaged, 18),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    dealt = 0
    for kind, queue, build, count in KINDS:
        seen: set[str] = set()
        made = 0
        while made < count:
            subject, body = build(r)
            body = wrap(r, body)
            if body in seen:  # phrase lists are finite; never repeat a ticket word for word
                continue
            seen.add(body)
            splits[PATTERN[dealt % len(PATTERN)]].append({"subject": subject, "body": body, "queue": queue, "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "subject": i["subject"], "body": i["body"], "queue": i["queue"],
                             "kind": i["kind"]}, ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
