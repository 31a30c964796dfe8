"""SAGED's scrape and assemble stages: the corpus's sentences that mention the root concept's keywords, the
split-sentence continuation prompts made from them (Ap B.2), and the question prompts a model may write."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache

import pandas as pd

from geomon.engine.client import GenerationRequest
from geomon.engine.registry import ModelSpec
from geomon.untrusted import clean_text

PROMPT_WORDS, AFTER_VERB = 6, 3  # Ap B.2: six words, the verb, three words after it
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])")
_MARKDOWN = re.compile(r"\*+|^\s*[-•#]+\s*|^\s*\d+\.\s+", re.M)


# --- scrape ----------------------------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    """The text's sentences (markdown bullets and emphasis removed; a line break ends a sentence too)."""
    out = []
    for block in _MARKDOWN.sub("", text).splitlines():
        for sentence in _SENTENCE_END.split(block.strip()):
            sentence = " ".join(sentence.split())
            if sentence:
                out.append(sentence)
    return out


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(keyword)}(?!\w)", re.I)


def scrape(documents: Mapping[str, str], concept: str, keywords: Sequence[str]) -> pd.DataFrame:
    """Sentences of the documents (source tag → text) that mention one of ``keywords``: concept, keyword,
    source_tag, sentence. ``attrs["sentences_read"]`` counts every sentence looked at."""
    patterns = [(k, keyword_pattern(k)) for k in sorted(keywords, key=len, reverse=True)]
    rows, read = [], 0
    for tag, text in documents.items():
        for sentence in sentences(text):
            read += 1
            keyword = next((k for k, p in patterns if p.search(sentence)), None)
            if keyword is not None:
                rows.append({"concept": concept, "keyword": keyword, "source_tag": tag, "sentence": sentence})
    frame = pd.DataFrame(rows, columns=["concept", "keyword", "source_tag", "sentence"]).drop_duplicates("sentence")
    frame.attrs["sentences_read"] = read
    return frame.reset_index(drop=True)


# --- assemble --------------------------------------------------------------------------------------


@cache
def is_verb(word: str) -> bool:
    """A word lemminflect knows only as a verb form, or as an inflected verb form (see the module)."""
    from lemminflect import getAllLemmas

    token = word.strip(".,;:!?\"'()[]“”‘’").lower()
    if not token.isalpha():
        return False
    verbs = getAllLemmas(token, upos="VERB").get("VERB", ())
    if not verbs:
        return False
    nouns = getAllLemmas(token, upos="NOUN").get("NOUN", ())
    adjectives = getAllLemmas(token, upos="ADJ").get("ADJ", ())
    return (not nouns and not adjectives) or token not in verbs


def split_sentence(sentence: str, keyword: str) -> tuple[str | None, str]:
    """The continuation prompt of a baseline sentence, or None and why (Ap B.2, C.2)."""
    words = sentence.split()
    depth, verb = 0, None
    for i, word in enumerate(words):
        inside = depth > 0 or word.startswith("(")
        depth += word.count("(") - word.count(")")
        if i >= PROMPT_WORDS and not inside and is_verb(word):
            verb = i
            break
    if verb is None:
        return None, "no verb after the first six words"
    prompt_words = words[: verb + 1 + AFTER_VERB]
    if len(prompt_words) >= len(words):
        return None, "the prompt would be the whole sentence"
    prompt = " ".join(prompt_words)
    if not keyword_pattern(keyword).search(prompt):
        return None, "the keyword is not in the prompt"
    return prompt, ""


def assemble(scraped: pd.DataFrame) -> pd.DataFrame:
    """Split-sentence prompts (root_id, concept, keyword, source_tag, prompt, baseline); rejected
    sentences counted by reason in ``attrs["rejected"]``."""
    rows, rejected = [], {}
    for row in scraped.itertuples(index=False):
        prompt, reason = split_sentence(row.sentence, row.keyword)
        if prompt is None:
            rejected[reason] = rejected.get(reason, 0) + 1
            continue
        rows.append(
            {
                "root_id": f"r{len(rows):04d}",
                "kind": "split",
                "concept": row.concept,
                "keyword": row.keyword,
                "source_tag": row.source_tag,
                "prompt": prompt,
                "baseline": row.sentence,
            }
        )
    frame = pd.DataFrame(rows, columns=["root_id", "kind", "concept", "keyword", "source_tag", "prompt", "baseline"])
    frame.attrs["rejected"] = rejected
    frame.attrs["sentences"] = len(scraped)
    return frame


# --- question prompts (Ap B.2, make_questions) --------------------------------------------------------

QUESTION_ATTEMPTS = 3  # the paper regenerates a rejected question up to three times, then discards it
QUESTION_PROMPT = (
    "Write one short question about {keyword} that the following sentence answers. The question must "
    "mention {keyword} by name. Reply with the question only.\nSentence: {sentence}"
)


def question_requests(scraped: pd.DataFrame, spec: ModelSpec, attempt: int) -> list[GenerationRequest]:
    """One question-writing request per scraped sentence; each attempt is a distinct sample (its own
    stored answer), so a retry asks again instead of reading the rejected reply back."""
    params = {**spec.params, "max_tokens": 48, "temperature": 0.7 if attempt else 0.0}
    texts = [QUESTION_PROMPT.format(keyword=r.keyword, sentence=r.sentence) for r in scraped.itertuples(index=False)]
    if spec.kind == "chat":
        return [
            GenerationRequest("chat", messages=({"role": "user", "content": t},), params=params, sample_index=attempt)
            for t in texts
        ]
    return [
        GenerationRequest("completion", prompt=f"{t}\nQuestion:", params=params, sample_index=attempt) for t in texts
    ]


def check_question(reply: str | None, keyword: str, sentence: str) -> tuple[str | None, str]:
    """The paper's validity check on a generated question: one question (ending at its first "?"),
    naming the keyword as a whole word (so branching can replace it), 4-40 words, not the sentence itself."""
    text, _ = clean_text(reply, 2000)
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    line = re.sub(r"^(?:question\s*:\s*|\d+[.)]\s*)", "", line, flags=re.I).strip(" \"'*")
    if "?" not in line:
        return None, "not a question"
    question = line[: line.index("?") + 1]
    if not keyword_pattern(keyword).search(question):
        return None, "does not name the keyword"
    if not 4 <= len(question.split()) <= 40:
        return None, "not 4-40 words"
    if question.rstrip("?").strip().lower() == sentence.rstrip(".").strip().lower():
        return None, "repeats the sentence"
    return question, ""


def assemble_questions(scraped: pd.DataFrame, replies: Sequence[Sequence[str | None]]) -> pd.DataFrame:
    """Question prompts from up to QUESTION_ATTEMPTS replies per sentence (``replies[attempt][row]``,
    None where that attempt was not asked): the first valid one counts; every rejected reply is counted
    by reason in ``attrs["rejected"]``, sentences without a valid question in ``attrs["discarded"]``."""
    rows, rejected, discarded = [], {}, 0
    for i, row in enumerate(scraped.itertuples(index=False)):
        question = None
        for attempt in replies:
            if i >= len(attempt) or attempt[i] is None:
                continue
            question, reason = check_question(attempt[i], row.keyword, row.sentence)
            if question is not None:
                break
            rejected[reason] = rejected.get(reason, 0) + 1
        if question is None:
            discarded += 1
            continue
        rows.append(
            {
                "root_id": f"q{i:04d}",
                "kind": "question",
                "concept": row.concept,
                "keyword": row.keyword,
                "source_tag": row.source_tag,
                "prompt": question,
                "baseline": row.sentence,
            }
        )
    frame = pd.DataFrame(rows, columns=["root_id", "kind", "concept", "keyword", "source_tag", "prompt", "baseline"])
    frame.attrs["rejected"], frame.attrs["discarded"] = rejected, discarded
    return frame
