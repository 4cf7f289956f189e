"""Generate the clinic-desk items (train/selection/test JSONL) byte-identically.

    python data/tasks/clinic-desk/generate.py [--out DIR]

Synthetic messages to the front desk of "Saltmarsh Lane Surgery", a fictional medical practice in
the fictional town of Ashcombe: which desk or queue handles this patient's message? Each message
is built from a kind (a plain desk or one of six house rules), filled from phrase lists with one
random.Random(SEED); nothing else is random. The house rules are in README.md; the seed skill
does not state them.
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SEED = 20251212
PATTERN = ("train", "test", "selection", "test", "train", "test")  # 2:1:3 dealt per kind
DESKS = ("gp-appointment", "urgent-triage", "nurse-clinic", "prescriptions", "test-results", "home-visit",
         "admin-office")
DISTRACT = (0, 2, 3)  # the n-th item of a kind that carries a rule's word: one each in train, selection, test

FIRST = {"f": ["Amelia", "Grace", "Priya", "Joanne", "Sofia", "Helen", "Aisha", "Maria", "Claire", "Yuki", "Ngozi",
               "Ruth", "Fatima", "Megan"],
         "m": ["Daniel", "Tomasz", "James", "Kwame", "Luca", "Peter", "Omar", "Rhys", "Arjun", "Callum", "Samuel",
               "Hiroshi", "Liam", "Graham"]}
LAST = ["Novak", "Okafor", "Brennan", "Patel", "Moreau", "Nakamura", "Kowalski", "Lindqvist", "Mensah", "Ferreira",
        "Walsh", "Adeyemi", "O'Neill", "Haddad", "Hughes", "Campbell"]
TITLE = {"f": ["Mrs", "Ms", "Miss"], "m": ["Mr"]}
HIS = {"f": "her", "m": "his"}
PARENT = {"f": "My mum", "m": "My dad"}
CHILD = {"f": "my daughter", "m": "my son"}
OPENERS = ["", "", "", "Hello. ", "Hi there. ", "Good morning. ", "Sorry to bother you. ",
           "Message left on the answerphone: ", "Sent via the online form: ", "Hello, I hope this is the right place. "]
ENDINGS = ["", "", "Thank you.", "Thanks.", "Many thanks.", "Please ring me back on my mobile.",
           "My number is the one on my record.", "I tried phoning but the line was busy.",
           "Sorry for the long message."]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "March", "April", "June", "August", "October", "November"]
WHEN = ["last Tuesday", "last week", "on Monday", "ten days ago", "a fortnight ago", "on the 3rd", "last Thursday"]
DRUGS = ["levothyroxine", "omeprazole", "salbutamol inhaler", "metformin", "atorvastatin", "sertraline",
         "amlodipine", "ramipril", "lansoprazole", "montelukast"]
PLACES = ["Kenya", "Thailand", "Peru", "India", "Vietnam", "Ghana", "Brazil", "Tanzania", "Cambodia"]
HOLIDAYS = ["a holiday in Spain", "a trip to Portugal", "travelling around Greece", "a week abroad in Italy",
            "a holiday in France"]


# ------------------------------------------------------------ rendering

def person(r: random.Random, low: int, high: int, sex: str | None = None) -> dict:
    sex = sex or r.choice("fm")
    return {"sex": sex, "first": r.choice(FIRST[sex]), "last": r.choice(LAST), "age": r.randint(low, high)}


def patient(r: random.Random, p: dict) -> str:
    """The patient line of the desk's record: name and age in one of several layouts."""
    first, last, age = p["first"], p["last"], p["age"]
    if "shown" in p:  # a child: the age as the parent gave it ("9 months", "aged 1", "2 years old")
        return r.choice([f"{first} {last}, {p['shown']}", f"{first} {last} ({p['shown']})"])
    title = p.get("title") or r.choice(TITLE[p["sex"]])
    return r.choice([f"{first} {last}, {age}", f"{title} {first[0]}. {last}, aged {age}",
                     f"{first} {last} (age {age})", f"{first} {last}, {age} years old"])


def wrap(r: random.Random, text: str) -> str:
    """A message around the body; the opener and ending never change which desk it goes to."""
    return " ".join(x for x in (r.choice(OPENERS) + text, r.choice(ENDINGS)) if x)


# ------------------------------------------------------------ plain desks

GP_PROBLEMS = ["My knee has been aching for {w} weeks, worse on the stairs.",
               "I've had heartburn most evenings for about a month.",
               "A mole on my back seems to have changed shape.",
               "I've been struggling to sleep for {w} weeks and feel run down.",
               "I've had a cough for {w} weeks that won't go away, but no temperature.",
               "I keep getting headaches in the afternoons.",
               "There's a small lump on my wrist that doesn't hurt.",
               "The hearing in my left ear seems worse lately.",
               "I'd like to talk to a doctor about my low mood.",
               "The eczema on my hands has flared up again.",
               "I've had pins and needles in my fingers on and off for {w} weeks."]
GP_ASKS = ["Could I book an appointment with a doctor?", "Can I see a GP this week or next?",
           "I'd like a routine appointment, please.", "No rush, but I'd like a doctor to have a look.",
           "Is there a doctor's appointment free in the next few days?",
           "When is the next available appointment with a GP?"]
BACK_FROM = ["an earache that won't shift", "an itchy rash on my legs", "an upset stomach on and off",
             "a sore shoulder"]


def gp(r, n):
    p = person(r, 19, 79)
    if n in DISTRACT:  # travel mentioned, no jab: still an ordinary appointment
        body = f"Since I got back from {r.choice(HOLIDAYS)} {r.randint(2, 5)} weeks ago I've had {r.choice(BACK_FROM)}."
    else:
        body = r.choice(GP_PROBLEMS).format(w=r.randint(2, 8))
    return p, f"{body} {r.choice(GP_ASKS)}"


URGENT = ["I've had a high temperature since last night and can't keep any fluids down.",
          "I cut my hand on a broken glass this morning; it's deep and keeps bleeding through the plaster.",
          "My asthma is much worse today and my inhaler only helps for a few minutes.",
          "I have severe pain in my right ear that got much worse overnight.",
          "My calf has gone swollen, hot and painful since yesterday, after a long flight back from holiday.",
          "It burns when I pass water, I have a temperature and my back has hurt since this morning.",
          "My eye has been red and very painful since I woke up and my vision is blurry."]
URGENT_ASKS = ["Can a doctor call me back today?", "I need to speak to someone today, please.",
               "Can I be seen today?", "Please could the duty doctor ring me this morning?",
               "I don't think this can wait until next week."]


def urgent(r, n):
    return person(r, 18, 84), f"{r.choice(URGENT)} {r.choice(URGENT_ASKS)}"


NURSE_JABS = [("I've had a letter inviting me for my flu jab.", 65, 88),
              ("I'm {age} and would like my shingles vaccination.", 70, 79),
              ("I've just turned {age} and would like my pneumonia jab.", 65, 66),
              ("I'd like my autumn COVID booster vaccination.", 75, 90),
              ("I need a tetanus jab; my last booster was over ten years ago.", 30, 70)]
NURSE_OTHER = [("The doctor asked me to book a blood test for next week.", 25, 80, None),
               ("I need the dressing on my leg changed after my operation on {day}.", 30, 80, None),
               ("I'm due a blood pressure check.", 40, 85, None),
               ("My stitches need to come out on {day}.", 20, 75, None),
               ("I'm due my three-monthly B12 injection.", 40, 85, None),
               ("I've had a letter saying I'm due for my smear test.", 25, 64, "f"),
               ("I need my annual asthma review.", 18, 70, None),
               ("My ears are blocked with wax again and need clearing.", 40, 85, None)]
NURSE_ASKS = ["Can I book in with the nurse?", "When is the next nurse appointment?",
              "Could you book me in with the practice nurse?", "Is there a nurse slot on a {day} morning?"]


def nurse(r, n):
    ask = r.choice(NURSE_ASKS).format(day=r.choice(DAYS))
    if n in DISTRACT or r.random() < 0.3:  # a jab with no travel: an ordinary nurse appointment
        text, low, high = r.choice(NURSE_JABS)
        p = person(r, low, high)
    else:
        text, low, high, sex = r.choice(NURSE_OTHER)
        p = person(r, low, high, sex)
    return p, f"{text.format(age=p['age'], day=r.choice(DAYS))} {ask}"


REPEATS = ["Please could I have my repeat prescription of {drug}?",
           "I've run out of my {drug} sooner than expected. Can I order more?",
           "The pharmacy says they haven't received my repeat of {drug}.",
           "Can my repeat of {drug} go to the Harbour Road pharmacy instead of my usual one from now on?",
           "I'd like to order my {drug} and my usual skin cream together this month.",
           "My repeat of {drug} says it needs a review before it can be issued; can it be issued this once?"]
TRAVEL_REPEATS = ["I'm going abroad for {w} weeks on {day} and need an extra month of my {drug} before I travel.",
                  "We're off on holiday on {day}; could my repeat of {drug} be ready before then?",
                  "I'll be travelling for work for {w} weeks; could I order my {drug} early?"]


def prescriptions(r, n):
    text = r.choice(TRAVEL_REPEATS if n in DISTRACT else REPEATS)  # travel mentioned, no jab
    return person(r, 25, 85), text.format(drug=r.choice(DRUGS), w=r.randint(3, 8), day=r.choice(DAYS))


RESULTS = ["I had a blood test {when} and wanted to know if the results are back.",
           "Are the results of the urine sample I gave {when} in yet?",
           "I had an X-ray of my wrist at the hospital {when}; has the report reached you?",
           "Could someone tell me my cholesterol result from the health check {when}?",
           "The nurse took a swab {when} and said to call for the result.",
           "I'm ringing for the results of my heart trace (ECG) from {when}.",
           "My thyroid blood test was {when}; is the result normal?"]


def results(r, n):
    return person(r, 20, 85), r.choice(RESULTS).format(when=r.choice(WHEN))


HOUSEBOUND = ["{rel} has been bedbound since {his} fall and can't get to the surgery; could a doctor come to the "
              "house about the pain in {his} hip?",
              "I'm housebound with my COPD and my leg ulcer looks angrier; could someone visit me at home?",
              "{rel} has dementia and gets very distressed leaving the house; could the doctor see {him} at home "
              "about {his} swollen legs?",
              "I'm recovering from a hip operation and can't manage the stairs or the car yet. Could the doctor "
              "come out to see me about the pain?",
              "I haven't been able to leave the flat since my stroke; I'd like a doctor to visit about my chest.",
              "{rel} is too frail to travel to the surgery now and has a sore on {his} heel; could a doctor call "
              "round?"]


def home(r, n):
    p = person(r, 68, 96)
    text = r.choice(HOUSEBOUND)
    return p, text.format(rel=PARENT[p["sex"]], his=HIS[p["sex"]], him="her" if p["sex"] == "f" else "him")


ADMIN = ["I've moved to {street} and need to update my address.",
         "I've just moved to Ashcombe and would like to register with the practice.",
         "Could I have a copy of my medical records for my solicitor?",
         "My employer needs a letter confirming I attended an appointment here on {day}.",
         "I can't log in to the online booking system; could you reset my access?",
         "I've changed my mobile number; please update it on my record.",
         "I need the practice to fill in a form for my insurance claim.",
         "I've changed my surname after getting married; please update my record."]
STREETS = ["12 Quarry Lane", "Flat 3, 40 Harbour Road", "7 Orchard Close", "the new flats on Mill Street",
           "19 Station Road"]


def admin(r, n):
    return person(r, 18, 85), r.choice(ADMIN).format(street=r.choice(STREETS), day=r.choice(DAYS))


# ------------------------------------------------------------ house rules

CHILD_FIRST = {"f": ["Isla", "Ava", "Mia", "Zara", "Chloe"], "m": ["Leo", "Noah", "Ollie", "Kofi", "Arlo"]}
CHILD_PROBLEMS = ["{who} has had a runny nose and a cough for {d} days.",
                  "{who} keeps pulling at one ear but is still eating well.",
                  "{who} has a dry, scaly rash behind the knees.",
                  "{who} has had sticky, crusty eyes in the mornings for {d} days.",
                  "{who} has a cough that is worse at night, otherwise happy.",
                  "{who} has white patches inside the mouth.",
                  "{who} has a patch of eczema on one cheek that is getting worse."]
CHILD_ASKS = ["Could we book an appointment with a doctor?", "Can we see a GP this week?",
              "No rush, but we'd like a doctor to have a look.", "Is there a routine appointment with a doctor free?",
              "We'd like to see a doctor when there's a slot."]


def child(r: random.Random, age: int, shown: str) -> tuple[dict, str]:
    sex = r.choice("fm")
    p = {"sex": sex, "first": r.choice(CHILD_FIRST[sex]), "last": r.choice(LAST), "age": age, "shown": shown}
    who = r.choice([p["first"], CHILD[sex][0].upper() + CHILD[sex][1:]])
    body = r.choice(CHILD_PROBLEMS).format(who=who, d=r.randint(3, 9))
    return p, f"{body} {r.choice(CHILD_ASKS)}"


def under_two(r, n):
    """Rule 1: an unwell child under 2 is seen the same day (urgent-triage), however mild it sounds."""
    if r.random() < 0.75:
        months = r.randint(3, 23)
        return child(r, 0, r.choice([f"{months} months", f"{months} months old", f"aged {months} months"]))
    return child(r, 1, r.choice(["1", "aged 1", "1 year old"]))


def two_plus(r, n):
    """Hard negative for rule 1: 2 or older goes to an ordinary appointment (exactly 2 in every split)."""
    years = 2 if n < 3 else r.randint(3, 6)
    return child(r, years, r.choice([f"{years}", f"aged {years}", f"{years} years old"]))


SIDE_EFFECTS = [("amlodipine", "swollen ankles"), ("ramipril", "a dry, tickly cough that won't stop"),
                ("atorvastatin", "aching muscles in my legs"), ("metformin", "an upset stomach most days"),
                ("sertraline", "trouble getting to sleep"), ("iron tablets", "bad constipation"),
                ("the new blood pressure tablets", "dizzy spells when I stand up"),
                ("my new brown inhaler", "a hoarse voice"), ("naproxen", "indigestion after every meal")]
SIDE_FORMS = ["Since I started {drug} {w} weeks ago I've had {symptom}.",
              "Ever since the doctor put me on {drug} I've had {symptom}.",
              "I think {drug} might not agree with me: I've had {symptom} since I started.",
              "Could {symptom} be a side effect? I've been on {drug} for {w} weeks.",
              "I've been taking {drug} for {w} weeks and now I have {symptom}."]


def side_effects(r, n):
    """Rule 2: a suspected side effect of a medicine goes to the prescriptions desk (the practice pharmacist)."""
    drug, symptom = r.choice(SIDE_EFFECTS)
    body = r.choice(SIDE_FORMS).format(drug=drug, symptom=symptom, w=r.randint(2, 10))
    return person(r, 35, 82), f"{body[0].upper() + body[1:]} {r.choice(GP_ASKS)}"


def travel_jabs(r, n):
    """Rule 3: vaccinations for travel abroad start with the travel form at the admin office, not the nurse."""
    place, weeks = r.choice(PLACES), r.randint(4, 12)
    body = r.choice([f"We're going to {place} in {r.choice(MONTHS)} and need our travel vaccinations.",
                     f"Do I need any jabs for a trip to {place}? I fly in {weeks} weeks.",
                     f"I'd like to book my travel jabs: I'm off to {place} in {weeks} weeks.",
                     f"I need a yellow fever jab before my holiday in {place}.",
                     f"I'm travelling to {place} in {weeks} weeks' time and need typhoid and hepatitis A jabs.",
                     f"My doctor said I'll need vaccinations before I go backpacking in {place} this summer."])
    return person(r, 18, 70), f"{body} {r.choice(NURSE_ASKS).format(day=r.choice(DAYS))}"


PREGNANT = ["I'm {w} weeks pregnant", "I'm expecting a baby in {month}", "I'm pregnant with my second child",
            "I'm due in {month}", "I'm {w} weeks along with my first baby"]


def pregnancy(r, n):
    """Rule 4: anything from a pregnant patient goes to the nurse clinic, where the midwife works."""
    said = r.choice(PREGNANT).format(w=r.randint(8, 34), month=r.choice(MONTHS))
    ailment = r.choice(["heartburn every night", "a cold sore", "a painful back", "a cold I cannot shake"])
    drug = r.choice(["levothyroxine", "omeprazole", "salbutamol inhaler"])
    body = r.choice([f"{said} and have had {ailment}. {r.choice(GP_ASKS)}",
                     f"{said}; are the results of the blood test I had {r.choice(WHEN)} back?",
                     f"{said} and need the form for free prescriptions signed.",
                     f"{said}. Could my usual repeat of {drug} be issued?",
                     f"{said} and I've moved to {r.choice(STREETS)}; please update my address."])
    return person(r, 20, 42, "f"), body


HOMES = ["Meadowbank Care Home", "Willow Court Nursing Home", "The Beeches residential home", "Larch House care home",
         "Elmfield Lodge nursing home"]


def care_home(r, n):
    """Rule 5: every message from a care home about a resident goes to the home-visit round."""
    p = person(r, 78, 99)
    p["title"] = r.choice(TITLE[p["sex"]])  # the same title in the patient line and the message
    name, his, him = f"{p['title']} {p['last']}", HIS[p["sex"]], "her" if p["sex"] == "f" else "him"
    home_ = r.choice(HOMES)
    intro = r.choice([f"This is {r.choice(['Sam', 'Priya', 'Dawn', 'Marek'])} from {home_}.",
                      f"Calling from {home_} about one of our residents.", f"I'm a carer at {home_}.",
                      f"{home_} here, the senior carer speaking."])
    ask = r.choice([f"{name} has a dry patch of skin on {his} arm that we'd like a doctor to look at; we can bring "
                    f"{him} to the surgery on {r.choice(DAYS)}.",
                    f"{name}'s repeat of {r.choice(DRUGS)} is due; could it go to our usual pharmacy?",
                    f"Are {name}'s blood test results from {r.choice(WHEN)} back yet?",
                    f"{name} is due {his} flu jab; can we book {him} in with the nurse?",
                    f"{name} has been more forgetful this month; could we book {him} an appointment with the GP?"])
    return p, f"{intro} {ask}"


def fit_note(r, n):
    """Rule 6: a sick note (fit note) needs a doctor's appointment, not the admin office's paperwork."""
    problem = r.choice(["a bad back", "flu", "a chest infection", "my knee", "stress", "a sprained ankle"])
    body = r.choice([f"I need a sick note for work; I've been off with {problem} since {r.choice(DAYS)}.",
                     f"Could I have a fit note? My employer wants one for my time off with {problem}.",
                     f"My sick note runs out on {r.choice(DAYS)} and I'm still off with {problem}; can it be extended?",
                     "HR have asked for a fit note saying I can go back to work on lighter duties.",
                     f"I need a doctor's note for my employer covering the {r.randint(8, 20)} days I was off with "
                     f"{problem}."])
    return person(r, 20, 64), body


KINDS = [  # (name, desk, builder, count) -- counts are multiples of 6 so every split gets its share
    ("gp-appointment", "gp-appointment", gp, 12),
    ("urgent-triage", "urgent-triage", urgent, 12),
    ("nurse-clinic", "nurse-clinic", nurse, 12),
    ("prescriptions", "prescriptions", prescriptions, 12),
    ("test-results", "test-results", results, 12),
    ("home-visit", "home-visit", home, 12),
    ("admin-office", "admin-office", admin, 12),
    ("rule_under_two", "urgent-triage", under_two, 18),
    ("age_two_plus", "gp-appointment", two_plus, 12),  # rule 1 at or above its threshold: an ordinary appointment
    ("rule_side_effects", "prescriptions", side_effects, 18),
    ("rule_travel_jabs", "admin-office", travel_jabs, 12),
    ("rule_pregnancy", "nurse-clinic", pregnancy, 18),
    ("rule_care_home", "home-visit", care_home, 12),
    ("rule_fit_note", "gp-appointment", fit_note, 18),
]


def generate() -> dict[str, list[dict]]:
    r = random.Random(SEED)
    splits: dict[str, list[dict]] = {"train": [], "selection": [], "test": []}
    seen: set[str] = set()
    dealt = 0
    for kind, desk, build, count in KINDS:
        made = 0
        while made < count:
            p, body = build(r, made)
            message = wrap(r, body)
            if message in seen:  # phrase lists are finite; never repeat a message word for word
                continue
            seen.add(message)
            splits[PATTERN[dealt % len(PATTERN)]].append({"patient": patient(r, p), "message": message,
                                                          "desk": desk, "kind": kind})
            dealt += 1
            made += 1
    for name, items in splits.items():
        r.shuffle(items)
        for number, item in enumerate(items, 1):
            item["id"] = f"cd-{name[:3]}-{number:03d}"
    return splits


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, items in generate().items():
        lines = [json.dumps({"id": i["id"], "patient": i["patient"], "message": i["message"], "desk": i["desk"],
                             "kind": i["kind"]}, ensure_ascii=False) for i in items]
        (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    write(parser.parse_args().out)
