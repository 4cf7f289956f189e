"""Generate the invoice-extraction items (train/selection/test JSONL) byte-identically.

    python data/tasks/invoice-extraction/generate.py [--out DIR]

Synthetic invoices in five layouts (English, German, French, e-mail, table) with the
vendor's own conventions for dates, amounts and legal suffixes, plus distractors
(customer company, due/delivery dates, subtotal and VAT lines). The expected JSON
follows the house conventions in README.md. One random.Random(SEED); amounts are
computed in integer cents so totals are exact.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from pathlib import Path

SEED = 7311
PATTERN = ("train", "test", "selection", "test", "train", "test")
COUNT_PER_LAYOUT = 36  # 5 layouts x 36 = 180 items, 60/30/90

# (base name, legal suffix, country, currency)
VENDORS = [
    ("Acme", "GmbH", "DE", "EUR"), ("Nordlicht Logistik", "AG", "DE", "EUR"), ("Müller Feinkost", "GmbH", "DE", "EUR"),
    ("Bergmann & Sohn", "KG", "DE", "EUR"), ("Rheinwerk Druck", "GmbH & Co. KG", "DE", "EUR"),
    ("Atelier Lumière", "SARL", "FR", "EUR"), ("Vignoble Castel", "SAS", "FR", "EUR"), ("Optique Martin", "S.A.", "FR", "EUR"),
    ("De Vries Techniek", "B.V.", "NL", "EUR"), ("Hollandia Print", "N.V.", "NL", "EUR"),
    ("Officina Romano", "S.r.l.", "IT", "EUR"), ("Ferro Costruzioni", "S.p.A.", "IT", "EUR"),
    ("Baker & Sons", "Ltd.", "GB", "GBP"), ("Thames Cloud Services", "Limited", "GB", "GBP"), ("Kestrel Analytics", "PLC", "GB", "GBP"),
    ("Acme", "Inc.", "US", "USD"), ("Bluebird Software", "LLC", "US", "USD"), ("Redwood Supply", "Corp.", "US", "USD"),
    ("Great Lakes Freight", "Inc", "US", "USD"), ("Summit Office", "Co.", "US", "USD"),
    ("Alpenblick Hotel", "AG", "CH", "CHF"), ("Helvetia Uhren", "GmbH", "CH", "CHF"),
    ("Nordisk Design", "AB", "SE", "SEK"), ("Skog Verktyg", "AB", "SE", "SEK"),
]
CUSTOMERS = ["Globex GmbH", "Initech Ltd.", "Umbrella Retail SA", "Stark Components AG", "Wayne Logistics Inc.",
             "Hooli B.V.", "Vandelay Imports LLC", "Soylent Foods S.r.l.", "Tyrell Systems AB", "Cyberdyne Corp."]
ITEMS = [("Consulting hours", 80, 160), ("Printer toner (black)", 35, 90), ("Office chair", 120, 480),
         ("Annual software licence", 300, 2400), ("Catering service", 150, 900), ("Freight Hamburg-Lyon", 400, 1800),
         ("Hotel room (per night)", 90, 260), ("Wine selection, 12 bottles", 120, 420), ("Business cards 500 pcs", 25, 70),
         ("Cloud hosting (monthly)", 40, 600), ("Safety shoes", 45, 130), ("Repair labour (hour)", 55, 110),
         ("Spare parts kit", 20, 240), ("Design workshop (day)", 600, 1600), ("Data analysis", 200, 1500)]
STREETS = {"DE": ["Hauptstraße 12", "Lindenallee 7", "Industriestr. 40"], "FR": ["12 Rue de la Paix", "8 Avenue Foch"],
           "NL": ["Keizersgracht 101", "Stationsplein 5"], "IT": ["Via Roma 8", "Corso Venezia 21"],
           "GB": ["221 Baker Street", "14 King's Road"], "US": ["500 Market St", "1200 Lake Shore Dr"],
           "CH": ["Bahnhofstrasse 3", "Seestrasse 90"], "SE": ["Drottninggatan 44", "Storgatan 9"]}
VAT = {"DE": 19, "FR": 20, "NL": 21, "IT": 22, "GB": 20, "US": 0, "CH": 8, "SE": 25}
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
MONTHS_DE = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
             "November", "Dezember"]
MONTHS_FR = ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
             "novembre", "décembre"]


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def date_style(r: random.Random, country: str):
    """One vendor writes all its dates one way. Numeric slash dates are day-first outside the US."""
    en, de, fr = MONTHS_EN, MONTHS_DE, MONTHS_FR
    if country == "US":
        styles = [lambda d: f"{en[d.month - 1]} {d.day}, {d.year}", lambda d: f"{en[d.month - 1][:3]} {ordinal(d.day)}, {d.year}",
                  lambda d: d.isoformat(), lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}"]
    elif country in ("DE", "CH"):
        styles = [lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}", lambda d: f"{d.day}. {de[d.month - 1]} {d.year}",
                  lambda d: f"{d.day:02d}.{d.month:02d}.{d.year % 100:02d}"]
    elif country == "FR":
        styles = [lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}", lambda d: f"{d.day} {fr[d.month - 1]} {d.year}"]
    else:
        styles = [lambda d: f"{ordinal(d.day)} {en[d.month - 1]} {d.year}", lambda d: f"{d.day} {en[d.month - 1][:3]} {d.year}",
                  lambda d: f"{d.day:02d}/{d.month:02d}/{d.year % 100:02d}", lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",
                  lambda d: f"{d.day:02d}-{en[d.month - 1][:3]}-{d.year}", lambda d: d.isoformat()]
    return r.choice(styles)


def group(units: int, sep: str) -> str:
    return f"{units:,}".replace(",", sep)


def amount_style(r: random.Random, currency: str):
    """One vendor writes all its amounts one way (separators and symbols vary by locale)."""
    q = chr(39)
    styles = {
        "EUR": [lambda u, c: f"{group(u, '.')},{c:02d} €", lambda u, c: f"€ {group(u, '.')},{c:02d}",
                lambda u, c: f"EUR {group(u, '.')},{c:02d}", lambda u, c: f"{group(u, ' ')},{c:02d} EUR",
                lambda u, c: f"{u},{c:02d} €", lambda u, c: f"€{group(u, ',')}.{c:02d}"],
        "USD": [lambda u, c: f"${group(u, ',')}.{c:02d}", lambda u, c: f"USD {group(u, ',')}.{c:02d}",
                lambda u, c: f"US${group(u, ',')}.{c:02d}", lambda u, c: f"{group(u, ',')}.{c:02d} USD"],
        "GBP": [lambda u, c: f"£{group(u, ',')}.{c:02d}", lambda u, c: f"GBP {group(u, ',')}.{c:02d}",
                lambda u, c: f"£ {group(u, ',')}.{c:02d}"],
        "CHF": [lambda u, c: f"CHF {group(u, q)}.{c:02d}", lambda u, c: f"Fr. {group(u, q)}.{c:02d}",
                lambda u, c: f"{group(u, q)}.{c:02d} CHF"],
        "SEK": [lambda u, c: f"{group(u, ' ')},{c:02d} kr", lambda u, c: f"SEK {group(u, ' ')},{c:02d}",
                lambda u, c: f"{group(u, ' ')},{c:02d} SEK"],
    }[currency]
    style = r.choice(styles)
    return lambda cents: style(*divmod(cents, 100))


def lines_and_totals(r: random.Random, country: str):
    lines = []
    for name, low, high in r.sample(ITEMS, r.randint(1, 4)):
        qty = r.choice([1, 1, 1, 2, 2, 3, 4, 5, 8, 10]) if high < 700 else 1
        lines.append((name, qty, r.randint(low, high) * 100 + r.choice([0, 0, 50, 90, 99, 45])))
    subtotal = sum(q * u for _, q, u in lines)
    rate = VAT[country]
    tax = (subtotal * rate + 50) // 100
    return lines, subtotal, rate, tax, subtotal + tax


def invoice_number(r: random.Random, issued: dt.date) -> str:
    return r.choice([f"INV-{issued.year}-{r.randint(100, 9999):04d}", f"{issued.year}{r.randint(1000, 99999)}",
                     f"RE-{r.randint(10000, 99999)}", f"F{issued.year % 100}-{r.randint(100, 999)}"])


def layout_english(r, v, f):
    rows = "\n".join(f"{name:<30} {qty:>3} x {f['amt'](unit)}" for name, qty, unit in f["lines"])
    tax_line = f"VAT {f['rate']}%: {f['amt'](f['tax'])}\n" if f["rate"] else "Sales tax: not applicable\n"
    total_label = r.choice(["Total", "TOTAL", "Amount due", "Grand total", "Total due"])
    return (f"{v['full']}\n{v['street']}\n\nINVOICE {f['number']}\nInvoice date: {f['issued']}\n"
            f"Due date: {f['due']}\n\nBill to: {f['customer']}\n\n{rows}\n\n"
            f"Subtotal: {f['amt'](f['subtotal'])}\n{tax_line}{total_label}: {f['amt'](f['total'])}")


def layout_german(r, v, f):
    rows = "\n".join(f"{qty} x {name} à {f['amt'](unit)}" for name, qty, unit in f["lines"])
    return (f"{v['full']} · {v['street']}\n\nAn: {f['customer']}\n\nRechnung Nr. {f['number']}\n"
            f"Rechnungsdatum: {f['issued']}\nLeistungsdatum: {f['delivered']}\n\n{rows}\n\n"
            f"Nettobetrag: {f['amt'](f['subtotal'])}\nMwSt. {f['rate']}%: {f['amt'](f['tax'])}\n"
            f"Gesamtbetrag: {f['amt'](f['total'])}\nZahlbar bis {f['due']} ohne Abzug.")


def layout_french(r, v, f):
    rows = "\n".join(f"- {name} ({qty}) : {f['amt'](qty * unit)}" for name, qty, unit in f["lines"])
    return (f"FACTURE N° {f['number']}\nÉmetteur : {v['full']}, {v['street']}\nClient : {f['customer']}\n"
            f"Date de facture : {f['issued']}\nDate d'échéance : {f['due']}\n\n{rows}\n\n"
            f"Total HT : {f['amt'](f['subtotal'])}\nTVA {f['rate']} % : {f['amt'](f['tax'])}\n"
            f"Total TTC : {f['amt'](f['total'])}")


def layout_email(r, v, f):
    items = ", ".join(name.lower() for name, _, _ in f["lines"])
    return (f"From: billing@{v['domain']}\nTo: accounts@{f['customer'].split()[0].lower()}.example\n"
            f"Subject: Invoice {f['number']} from {v['full']}\n\nHello {f['customer']} team,\n\n"
            f"please find our invoice {f['number']} dated {f['issued']} for {items}. "
            f"The net amount is {f['amt'](f['subtotal'])}; including tax the amount due is {f['amt'](f['total'])}, "
            f"payable by {f['due']}.\n\nKind regards,\nAccounts team, {v['full']}")


def layout_table(r, v, f):
    rows = "\n".join(f"| {name} | {qty} | {f['amt'](unit)} | {f['amt'](qty * unit)} |" for name, qty, unit in f["lines"])
    return (f"{v['full'].upper() if r.random() < 0.3 else v['full']} | Tax invoice\nCustomer: {f['customer']}\n"
            f"Order date: {f['ordered']} | Invoice date: {f['issued']} | Payment due: {f['due']}\n\n"
            f"| Item | Qty | Unit price | Amount |\n|---|---|---|---|\n{rows}\n\n"
            f"Net: {f['amt'](f['subtotal'])} | Tax ({f['rate']}%): {f['amt'](f['tax'])} | TOTAL DUE: {f['amt'](f['total'])}")


LAYOUTS = [("english", layout_english, None), ("german", layout_german, ("DE", "CH")),
           ("french", layout_french, ("FR",)), ("email", layout_email, None), ("table", layout_table, None)]


def make(r: random.Random, layout) -> dict:
    name, build, countries = layout
    base, suffix, country, currency = r.choice([v for v in VENDORS if countries is None or v[2] in countries])
    issued = dt.date(2023, 1, 1) + dt.timedelta(days=r.randint(0, 700))
    if country == "US" and issued.day <= 12:  # US slash dates would be ambiguous there: move past the 12th
        issued += dt.timedelta(days=13 - issued.day)
    lines, subtotal, rate, tax, total = lines_and_totals(r, country)
    when, amt = date_style(r, country), amount_style(r, currency)
    vendor = {"full": f"{base} {suffix}", "street": r.choice(STREETS[country]),
              "domain": base.lower().replace(" & ", "-").replace(" ", "").replace("ü", "ue").replace("è", "e") + ".example"}
    fields = {"lines": lines, "subtotal": subtotal, "rate": rate, "tax": tax, "total": total,
              "number": invoice_number(r, issued), "customer": r.choice(CUSTOMERS), "issued": when(issued),
              "due": when(issued + dt.timedelta(days=r.choice([14, 30, 45]))),
              "delivered": when(issued - dt.timedelta(days=r.randint(1, 10))),
              "ordered": when(issued - dt.timedelta(days=r.randint(2, 20))), "amt": amt}
    text = build(r, vendor, fields)
    expected = {"vendor": base.upper(), "invoice_date": issued.isoformat(),
                "total": f"{total // 100}.{total % 100:02d}", "currency": currency}
    return {"text": text, "expected": expected, "layout": name}


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    dealt = 0
    for layout in LAYOUTS:
        for _ in range(COUNT_PER_LAYOUT):
            splits[PATTERN[dealt % len(PATTERN)]].append(make(r, layout))
            dealt += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"inv-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "text": i["text"], "expected": i["expected"], "layout": i["layout"]},
                            ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
