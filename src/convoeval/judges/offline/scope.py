"""Topic scope: is a user request within the allowed topics (plain words such as "banking")?

Plain cosine similarity to a topic name is a weak signal on its own: short requests are close to
many topics. The score here is contrastive: the request is compared with the allowed topics and
with a fixed background of everyday topics (43 written for this library and the 23 tier-1 names of a
public content taxonomy), each topic phrased through
a few templates, and a softmax with a temperature turns the similarities into the probability that
an allowed topic is the best explanation of the request. That probability is then divided by the
list's prior odds (allowed topics against the background topics they compete with), so that one
threshold fits a list of one topic and a list of five alike. A broad topic (one within the
overlap cut-off of a tier-1 name, such as "travel" or "cars") also competes through that name's
tier-2 categories ("air travel", "hotels"; "auto repair"), each phrased through the same
templates: the allowed topics and the background alike, and the prior odds count them too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from convoeval.judges.offline import calibration as cal

FloatArray = npt.NDArray[np.float32]

#: How a topic name is phrased before it is embedded (the vectors are averaged).
TOPIC_TEMPLATES: tuple[str, ...] = (
    "a question about {topic}",
    "Can you help me with {topic}?",
    "I have a {topic} question.",
)

#: Everyday subjects a request may be about instead; written for this library, broad on purpose.
OWN_TOPICS: tuple[str, ...] = (
    "sports",
    "music and songs",
    "movies and television",
    "books and literature",
    "health and medicine",
    "fitness and exercise",
    "politics and government",
    "science",
    "history",
    "mathematics",
    "computers and software",
    "phones and gadgets",
    "the internet and social media",
    "video games",
    "shopping",
    "fashion and clothing",
    "jobs and careers",
    "the office and coworkers",
    "school and education",
    "pets and animals",
    "gardening and plants",
    "home repair and cleaning",
    "family and relationships",
    "parenting and children",
    "religion and philosophy",
    "law and legal matters",
    "the weather",
    "dates and times",
    "art and painting",
    "news and current events",
    "jokes and chit-chat",
    "feelings and emotions",
    "personal information",
    "the assistant itself",
    "settings and preferences",
    "insurance",
    "taxes",
    "investing and the stock market",
    "real estate and housing",
    "energy and utilities",
    "nature and the environment",
    "space and astronomy",
    "language and grammar",
)

#: The 23 tier-1 content categories IAB1-IAB23 of the IAB Tech Lab content taxonomy as OpenRTB 2.5
#: lists them (section 5.1, CC BY 3.0; "Uncategorized", "Non-Standard Content" and "Illegal
#: Content" left out), in plain words: a taxonomy made by others for all web content, so the
#: background covers what people commonly ask about without being chosen by looking at the
#: validation data (benchmarks/README.md).
IAB_TIER1: tuple[str, ...] = (
    "arts and entertainment",
    "automotive",
    "business",
    "careers",
    "education",
    "family and parenting",
    "health and fitness",
    "food and drink",
    "hobbies and interests",
    "home and garden",
    "law, government and politics",
    "news",
    "personal finance",
    "society",
    "science",
    "pets",
    "sports",
    "style and fashion",
    "technology and computing",
    "travel",
    "real estate",
    "shopping",
    "religion and spirituality",
)

#: The tier-2 categories of each IAB tier-1 category above, from the same OpenRTB 2.5 list (section
#: 5.1), in plain words: what a broad topic such as "travel" covers, made by others and not
#: chosen by looking at the validation data. A topic close to a tier-1 name is expanded into them
#: (`topic_facets`).
IAB_TIER2: dict[str, tuple[str, ...]] = {
    "arts and entertainment": (
        "books and literature", "celebrity fan gossip", "fine art", "humor", "movies", "music",
        "television",
    ),
    "automotive": (
        "auto parts", "auto repair", "buying and selling cars", "car culture",
        "certified pre-owned cars", "convertibles", "coupes", "crossovers", "diesel",
        "electric vehicles", "hatchbacks", "hybrids", "luxury cars", "minivans", "motorcycles",
        "off-road vehicles", "performance vehicles", "pickup trucks", "road-side assistance",
        "sedans", "trucks and accessories", "vintage cars", "wagons",
    ),
    "business": (
        "advertising", "agriculture", "biotech and biomedical", "business software",
        "construction", "forestry", "government", "green solutions", "human resources",
        "logistics", "marketing", "metals",
    ),
    "careers": (
        "career planning", "college", "financial aid", "job fairs", "job search",
        "resume writing and advice", "nursing", "scholarships", "telecommuting",
        "the US military", "career advice",
    ),
    "education": (
        "7-12 education", "adult education", "art history", "college administration",
        "college life", "distance learning", "English as a second language",
        "language learning", "graduate school", "homeschooling", "homework and study tips",
        "K-6 educators", "private school", "special education", "studying business",
    ),
    "family and parenting": (
        "adoption", "babies and toddlers", "daycare and pre-school", "family internet",
        "parenting K-6 kids", "parenting teens", "pregnancy", "special needs kids", "eldercare",
    ),
    "health and fitness": (
        "exercise", "ADD", "AIDS and HIV", "allergies", "alternative medicine", "arthritis",
        "asthma", "autism and PDD", "bipolar disorder", "brain tumor", "cancer", "cholesterol",
        "chronic fatigue syndrome", "chronic pain", "cold and flu", "deafness", "dental care",
        "depression", "dermatology", "diabetes", "epilepsy", "GERD and acid reflux",
        "headaches and migraines", "heart disease", "herbs for health", "holistic healing",
        "IBS and Crohn's disease", "incest and abuse support", "incontinence", "infertility",
        "men's health", "nutrition", "orthopedics", "panic and anxiety disorders", "pediatrics",
        "physical therapy", "psychology and psychiatry", "senior health", "sexuality",
        "sleep disorders", "smoking cessation", "substance abuse", "thyroid disease",
        "weight loss", "women's health",
    ),
    "food and drink": (
        "American cuisine", "barbecues and grilling", "Cajun and Creole", "Chinese cuisine",
        "cocktails and beer", "coffee and tea", "cuisine-specific", "desserts and baking",
        "dining out", "food allergies", "French cuisine", "health and low-fat cooking",
        "Italian cuisine", "Japanese cuisine", "Mexican cuisine", "vegan", "vegetarian", "wine",
    ),
    "hobbies and interests": (
        "art and technology", "arts and crafts", "beadwork", "bird-watching",
        "board games and puzzles", "candle and soap making", "card games", "chess", "cigars",
        "collecting", "comic books", "drawing and sketching", "freelance writing", "genealogy",
        "getting published", "guitar", "home recording", "investors and patents",
        "jewelry making", "magic and illusion", "needlework", "painting", "photography", "radio",
        "roleplaying games", "sci-fi and fantasy", "scrapbooking", "screenwriting",
        "stamps and coins", "video and computer games", "woodworking",
    ),
    "home and garden": (
        "appliances", "entertaining", "environmental safety", "gardening", "home repair",
        "home theater", "interior decorating", "landscaping", "remodeling and construction",
    ),
    "law, government and politics": (
        "immigration", "legal issues", "US government resources", "politics", "commentary",
    ),
    "news": ("international news", "national news", "local news"),
    "personal finance": (
        "beginning investing", "credit, debt and loans", "financial news", "financial planning",
        "hedge funds", "insurance", "investing", "mutual funds", "options",
        "retirement planning", "stocks", "tax planning",
    ),
    "society": (
        "dating", "divorce support", "gay life", "marriage", "senior living", "teens",
        "weddings", "ethnic specific",
    ),
    "science": (
        "astrology", "biology", "chemistry", "geology", "paranormal phenomena", "physics",
        "space and astronomy", "geography", "botany", "weather",
    ),
    "pets": (
        "aquariums", "birds", "cats", "dogs", "large animals", "reptiles", "veterinary medicine",
    ),
    "sports": (
        "auto racing", "baseball", "bicycling", "bodybuilding", "boxing",
        "canoeing and kayaking", "cheerleading", "climbing", "cricket", "figure skating",
        "fly fishing", "football", "freshwater fishing", "game and fish", "golf",
        "horse racing", "horses", "hunting and shooting", "inline skating", "martial arts",
        "mountain biking", "NASCAR racing", "Olympics", "paintball", "power and motorcycles",
        "pro basketball", "pro ice hockey", "rodeo", "rugby", "running and jogging", "sailing",
        "saltwater fishing", "scuba diving", "skateboarding", "skiing", "snowboarding",
        "surfing and body-boarding", "swimming", "table tennis and ping-pong", "tennis",
        "volleyball", "walking", "waterski and wakeboard", "world soccer",
    ),
    "style and fashion": (
        "beauty", "body art", "fashion", "jewelry", "clothing", "accessories",
    ),
    "technology and computing": (
        "3-D graphics", "animation", "antivirus software", "C and C++", "cameras and camcorders",
        "cell phones", "computer certification", "computer networking", "computer peripherals",
        "computer reviews", "data centers", "databases", "desktop publishing", "desktop video",
        "email", "graphics software", "home video and DVD", "internet technology", "Java",
        "JavaScript", "Mac support", "MP3 and MIDI", "net conferencing", "net for beginners",
        "network security", "palmtops and PDAs", "PC support", "portable", "entertainment",
        "shareware and freeware", "Unix", "Visual Basic", "web clip art", "web design and HTML",
        "web search", "Windows",
    ),
    "travel": (
        "adventure travel", "Africa", "air travel", "Australia and New Zealand",
        "bed and breakfasts", "budget travel", "business travel", "by US locale", "camping",
        "Canada", "Caribbean", "cruises", "Eastern Europe", "Europe", "France", "Greece",
        "honeymoons and getaways", "hotels", "Italy", "Japan", "Mexico and Central America",
        "national parks", "South America", "spas", "theme parks", "traveling with kids",
        "United Kingdom",
    ),
    "real estate": ("apartments", "architects", "buying and selling homes"),
    "shopping": ("contests and freebies", "couponing", "comparison", "engines"),
    "religion and spirituality": (
        "alternative religions", "atheism and agnosticism", "Buddhism", "Catholicism",
        "Christianity", "Hinduism", "Islam", "Judaism", "Latter-Day Saints", "pagan and Wiccan",
    ),
}  # fmt: skip

#: The background a request's allowed topics compete with (65 topics: "shopping" is in both).
BACKGROUND_TOPICS: tuple[str, ...] = tuple(dict.fromkeys(OWN_TOPICS + IAB_TIER1))


def topic_vectors(
    topics: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
    known: Mapping[str, FloatArray] | None = None,
) -> FloatArray:
    """One unit vector per topic: the mean of its templated phrasings. Topics in `known` (the
    shipped `topic_bank`, same model and phrasings) take their vector from there unembedded."""
    if not topics:
        return np.zeros((0, 384), dtype=np.float32)
    known = known or {}
    todo = list(dict.fromkeys(t for t in topics if t not in known))
    fresh: dict[str, FloatArray] = {}
    if todo:
        phrased = [t.format(topic=topic) for topic in todo for t in TOPIC_TEMPLATES]
        vecs = embed(phrased).reshape(len(todo), len(TOPIC_TEMPLATES), -1).mean(axis=1)
        norms = np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
        fresh = dict(zip(todo, (vecs / norms).astype(np.float32), strict=True))
    unit: FloatArray = np.stack([known[t] if t in known else fresh[t] for t in topics])
    return unit


def scope_probabilities(
    texts: Sequence[str],
    topics: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
    *,
    temperature: float,
    overlap: float,
    background_topics: Sequence[str] = BACKGROUND_TOPICS,
    vectors: Callable[[tuple[str, ...]], FloatArray] | None = None,
    expand: bool | None = None,
) -> list[float]:
    """P(allowed) per text, relative to the list's own competition.

    A softmax over allowed and background topic similarities gives the raw probability; its odds
    are divided by the prior odds len(allowed) / len(background kept), the odds a request would
    get if it were equally close to every topic. Without that, a list of three topics clears any
    fixed cut-off more easily than a list of one. Background topics whose vector is closer than
    `overlap` to an allowed topic are dropped, so an allowed topic never competes with its own
    synonym. `vectors` gives a tuple of topics' `topic_vectors` (a caller's cache of them, as
    they depend on nothing else); by default they are computed here. With `expand`, a topic
    (allowed or background) within `overlap` of an IAB tier-1 name also competes through each of
    that name's tier-2 categories (`topic_facets`), and the prior odds count those facets too;
    by default as calibrated (`calibration.SCOPE_EXPAND`).
    """
    if not texts:
        return []
    if not topics:
        return [0.0] * len(texts)
    expand = cal.SCOPE_EXPAND if expand is None else expand
    key = (tuple(topics), tuple(background_topics))
    if vectors is None:
        columns = _columns(*key, lambda names: topic_vectors(names, embed), overlap, expand)
    else:  # a caller's cached lookup: the columns of a list are cached too
        columns = _cached_columns(*key, vectors, overlap, expand)
    matrix, allowed_count, prior_odds = columns
    sims = (embed(texts) @ matrix).astype(np.float64)
    logits = sims / temperature
    top = logits.max(axis=1, keepdims=True)
    allowed_mass = np.exp(logits[:, :allowed_count] - top).sum(axis=1)
    background_mass = np.exp(logits[:, allowed_count:] - top).sum(axis=1)
    odds = allowed_mass / np.clip(background_mass * prior_odds, 1e-300, None)
    return [float(v) for v in odds / (1.0 + odds)]


def _columns(
    topics: tuple[str, ...],
    background_topics: tuple[str, ...],
    vectors: Callable[[tuple[str, ...]], FloatArray],
    overlap: float,
    expand: bool,
) -> tuple[FloatArray, int, float]:
    """What a request is compared with for one allowed list: one matrix whose columns are unit
    vectors (the allowed topics and their expansions, then the background topics kept and
    theirs; stored transposed, as the product with the requests is twice as fast so), how many
    of its columns are allowed, and the list's prior odds (allowed / background columns)."""
    allowed = vectors(topics)
    background = vectors(background_topics)
    keep = (background @ allowed.T).max(axis=1) < overlap
    kept = tuple(t for t, k in zip(background_topics, keep, strict=True) if k)
    mine = _with_facets(topics, allowed, vectors, overlap, expand)
    theirs = _with_facets(kept, background[keep], vectors, overlap, expand)
    matrix = np.ascontiguousarray(np.concatenate([mine, theirs]).T)
    matrix.setflags(write=False)
    return matrix, len(mine), len(mine) / max(len(theirs), 1)


#: `_columns` for the kit's cached vector lookups: a list's matrix (about 0.5 MB with the
#: background's expansions) is built once, not once per conversation.
_cached_columns = functools.lru_cache(maxsize=32)(_columns)


def topic_facets(
    topics: tuple[str, ...],
    own: FloatArray,
    vectors: Callable[[tuple[str, ...]], FloatArray],
    overlap: float,
) -> list[tuple[str, ...]]:
    """Per topic, the IAB tier-2 names it expands into: those of the tier-1 name closest to it,
    when that one is within cosine `overlap` of it (a broad topic such as "travel"), else none.
    `own` holds the topics' vectors."""
    if not topics:
        return []
    tier1 = vectors(IAB_TIER1)
    sims = own @ tier1.T
    best = sims.argmax(axis=1)
    return [IAB_TIER2[IAB_TIER1[j]] if sims[i, j] >= overlap else () for i, j in enumerate(best)]


@functools.lru_cache(maxsize=256)
def _facet_names(
    topics: tuple[str, ...], vectors: Callable[[tuple[str, ...]], FloatArray], overlap: float
) -> tuple[str, ...]:
    """All the expansions of `topics`, in order; cached, as a kit asks for the same lists again
    and again (`vectors` is the kit's own cached lookup, so the key names the embedder too)."""
    own = vectors(topics)
    return tuple(n for facets in topic_facets(topics, own, vectors, overlap) for n in facets)


def _with_facets(
    topics: tuple[str, ...],
    own: FloatArray,
    vectors: Callable[[tuple[str, ...]], FloatArray],
    overlap: float,
    expand: bool,
) -> FloatArray:
    """The topics' vectors `own` and, with `expand`, the vectors of their expansions after them
    (one row each)."""
    names = _facet_names(topics, vectors, overlap) if expand else ()
    return np.concatenate([own, vectors(names)]) if names else own
