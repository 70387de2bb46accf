"""The scale bench's synthetic store (bench/bench_scale.py): deterministic, realistic in shape.

No data is downloaded or read: texts come from the word lists below. The shape of a
store of N memories, as a bot in a few hundred QQ groups grows one:

- ``global``: 1 % of the rows (the bot-wide scope);
- a tail of large group partitions, 11 % of the rows, in partitions of 50k / 30k / 20k /
  10k rows where they fit (1M: all four; 100k: one of 10k; 10k: one of 1,100, below the
  HNSW threshold) — a group whose cap an operator raised;
- the rest in small partitions of tens of rows (log-normal, median 25, at most the
  default cap of 100): 70 % personal (``QQPlatform_Private_*``), 30 % small groups.

Rows are inserted in creation order, oldest first, the partitions interleaved as a live
bot writes them (a partition's rows are scattered over the table's pages). Ages spread
evenly over 0-33 days, so about a third are due for the sweep (as in bench_l2.py).

Texts: 70 % Chinese (log-normal around 30 characters: the size of real Chinese memories),
30 % English (log-normal around 86 characters: the LoCoMo observations' lengths, measured
once from the evaluation set, which stays where it is). Words are drawn by a Zipf law over
a vocabulary, a third of them from the partition's own topic words, so a partition's
memories share words and their vectors cluster (a group talks about its topics). A text's
vector is the normalised sum of its words' fixed random vectors plus noise: texts that
share words are near, as with a real embedding model, and keyword and vector search agree
in part. Search tokens are the product's own (``domain/tokens.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

import numpy as np
import numpy.typing as npt

from amrita_memory_pg.domain.tokens import search_tokens

Vectors = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]

GLOBAL_SHARE = 0.01
LARGE_SHARE = 0.11
LARGE_SIZES = (50_000, 30_000, 20_000, 10_000)
SMALL_MEDIAN, SMALL_SIGMA, SMALL_MAX = 25.0, 0.9, 100
PERSONAL_SHARE = 0.7
ZH_SHARE = 0.7
#: log-normal text lengths in characters: (log median, sigma, min, max)
ZH_LENGTH = (np.log(30.0), 0.35, 8, 200)
EN_LENGTH = (4.44, 0.29, 20, 400)
MAX_AGE_DAYS = 33.1
TOPIC_WORDS = 12
TOPIC_SHARE = 0.35
NOISE = 0.35
CATEGORIES = (None, None, "preference", "rule", "event", "knowledge")
TAGS = ("工作", "学习", "游戏", "家人", "旅行", "work", "music", "food")
CHUNK = 20_000
#: most words a text is made of (the longest texts stop there)
WORDS_PER_TEXT = 96

#: common Chinese characters: the Chinese words are pairs (and some triples) of them
ZH_CHARS = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    "对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面"
    "公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部"
    "正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关"
    "并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安"
    "表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共"
    "风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管"
    "夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品"
    "士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历史商千片容研像"
    "找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜"
    "离虽坏兴切猫狗茶饭菜酒歌舞球游戏考试周末生日朋友"
)
_EN_WORDS_TEXT = (
    "time person year way day thing man world life hand part child eye woman place work week "
    "case point company number group problem fact friend family school book story music "
    "painting dog cat garden camping hiking beach mountain trip concert guitar piano violin "
    "recipe dinner lunch coffee tea cake birthday party wedding job interview project team "
    "meeting office manager teacher student class exam course degree college university "
    "library museum art photo picture camera phone game movie show series song album band "
    "festival city country travel flight hotel car bike train bus house apartment room "
    "kitchen bed sofa window door plant flower tree park lake river sea ocean sun rain snow "
    "winter summer spring autumn morning evening night weekend monday friday holiday vacation "
    "support community charity volunteer shelter adoption counseling therapy health doctor "
    "hospital medicine exercise yoga running swimming football basketball tennis soccer gym "
    "diet vegetable fruit apple orange bread pizza pasta sushi noodle rice soup chocolate "
    "cookie pet puppy kitten horse bird fish book novel poem writing blog journal diary "
    "drawing sculpture pottery craft sewing knitting cooking baking gardening reading dancing "
    "singing learning teaching helping sharing moving buying selling building fixing planning "
    "love hope dream goal plan idea memory feeling advice lesson experience success failure "
    "challenge change decision choice chance luck gift surprise letter message email call "
    "visit news history science math physics chemistry biology language english chinese "
    "japanese french spanish german caroline melanie john maria david sarah james emma alice "
    "bob tom lucy red blue green yellow black white new old big small happy sad great good "
    "nice favorite important recent first last next every local online early late proud "
    "excited grateful enjoy like love want need start finish visit join attend celebrate "
    "remember mention share"
)
EN_WORDS = _EN_WORDS_TEXT.split()
_EN_STOP_TEXT = (
    "i me my we our you your he she it they them the a an and or but if of at by for with "
    "about to from in on is are was were be been have has had do does did will would can "
    "could should this that these those just really so very also"
)
EN_STOP = _EN_STOP_TEXT.split()


def zipf(n: int, s: float = 1.05) -> npt.NDArray[np.float64]:
    """Zipf probabilities of n ranked words (rank 1 the most frequent)."""
    weights = 1.0 / np.arange(2, n + 2, dtype=np.float64) ** s
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def unit(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


@dataclass(frozen=True)
class Draws:
    """Random choices for a batch of texts (row i = text i), drawn vectorised."""

    zh: list[list[int]]
    en: list[list[int]]
    topical: list[list[bool]]
    picks: list[list[int]]
    stops: list[list[int]]
    stop_here: list[list[bool]]


@dataclass(frozen=True)
class Rows:
    """One chunk of memories, in insertion order."""

    start: int
    ids: list[str]
    partitions: Ints
    texts: list[str]
    tokens: list[list[str]]
    vectors: Vectors
    importance: Ints
    categories: list[str | None]
    sources: list[str]
    tags: list[list[str]]
    created: list[datetime]


@dataclass(frozen=True)
class Query:
    """A chat query in one partition: its text, the product's tokens of it, its vector."""

    partition: int
    text: str
    tokens: list[str]
    vector: Vectors


@dataclass(frozen=True)
class Store:
    """The synthetic store of ``rows`` memories (see the module doc); ``now`` anchors ages."""

    rows: int
    now: datetime
    dim: int = 384
    seed: int = 42

    # ------------------------------------------------------------------ shape

    @cached_property
    def large(self) -> list[int]:
        """Rows of each large group partition."""
        budget = LARGE_SHARE * self.rows
        sizes: list[int] = []
        for size in LARGE_SIZES:
            if sum(sizes) + size <= budget:
                sizes.append(size)
        if not sizes and budget >= 100:
            sizes.append(int(budget))
        return sizes

    @cached_property
    def sizes(self) -> Ints:
        """Rows per partition: [global, large..., small...]."""
        rng = np.random.default_rng([self.seed, 1])
        head = [max(1, round(GLOBAL_SHARE * self.rows)), *self.large]
        rest = self.rows - sum(head)
        small: list[int] = []
        while rest > 0:
            drawn = rng.lognormal(np.log(SMALL_MEDIAN), SMALL_SIGMA, 4096)
            for x in np.clip(np.rint(drawn), 1, SMALL_MAX).astype(np.int64).tolist():
                take = min(int(x), rest)
                small.append(take)
                rest -= take
                if rest == 0:
                    break
        return np.asarray(head + small, dtype=np.int64)

    @property
    def partitions(self) -> int:
        return len(self.sizes)

    @property
    def first_small(self) -> int:
        return 1 + len(self.large)

    def name(self, p: int) -> str:
        """Partition p's key: 0 global, then the large groups, then the small partitions."""
        if p == 0:
            return "global"
        if p < self.first_small:
            return f"QQPlatform_Group_{900000 + p}"
        j = p - self.first_small
        if j % 10 < PERSONAL_SHARE * 10:
            return f"QQPlatform_Private_{10000 + j}"
        return f"QQPlatform_Group_{20000 + j}"

    def scope(self, p: int) -> str:
        if p == 0:
            return "global"
        return "user" if self.name(p).startswith("QQPlatform_Private_") else "group"

    def small_personal(self) -> list[int]:
        return [
            p
            for p in range(self.first_small, self.partitions)
            if self.name(p).startswith("QQPlatform_Private_")
        ]

    def small_groups(self) -> list[int]:
        return [
            p
            for p in range(self.first_small, self.partitions)
            if self.name(p).startswith("QQPlatform_Group_")
        ]

    @cached_property
    def order(self) -> npt.NDArray[np.int32]:
        """The partition of each row, in insertion order (interleaved as a bot writes)."""
        rng = np.random.default_rng([self.seed, 2])
        part = np.repeat(np.arange(self.partitions, dtype=np.int32), self.sizes)
        return np.asarray(rng.permutation(part), dtype=np.int32)

    # ------------------------------------------------------------------ words

    @cached_property
    def zh_words(self) -> list[str]:
        rng = np.random.default_rng([self.seed, 3])
        n = len(ZH_CHARS)
        words = {
            "".join(ZH_CHARS[k] for k in rng.integers(0, n, 3 if i % 5 == 0 else 2).tolist())
            for i in range(2400)
        }
        return sorted(words)

    @cached_property
    def word_vectors(self) -> Vectors:
        """A fixed random direction per word: zh words first, then the English ones."""
        rng = np.random.default_rng([self.seed, 4])
        count = len(self.zh_words) + len(EN_WORDS)
        return unit(rng.standard_normal((count, self.dim), dtype=np.float32))

    @cached_property
    def topics(self) -> tuple[Ints, Ints]:
        """Each partition's topic words: (zh word ids, en word ids), TOPIC_WORDS each."""
        rng = np.random.default_rng([self.seed, 5])
        zh = rng.choice(
            len(self.zh_words), (self.partitions, TOPIC_WORDS), p=zipf(len(self.zh_words), 0.6)
        )
        en = rng.choice(len(EN_WORDS), (self.partitions, TOPIC_WORDS), p=zipf(len(EN_WORDS), 0.6))
        return np.asarray(zh, dtype=np.int64), np.asarray(en, dtype=np.int64)

    def _draws(self, rng: np.random.Generator, n: int) -> Draws:
        """The random choices of n texts, drawn at once (one Zipf table per call)."""
        shape = (n, WORDS_PER_TEXT)
        return Draws(
            zh=rng.choice(len(self.zh_words), shape, p=self._zipf_zh).tolist(),
            en=rng.choice(len(EN_WORDS), shape, p=self._zipf_en).tolist(),
            topical=(rng.random(shape) < TOPIC_SHARE).tolist(),
            picks=rng.integers(0, TOPIC_WORDS, shape).tolist(),
            stops=rng.integers(0, len(EN_STOP), shape).tolist(),
            stop_here=(rng.random(shape) < 0.4).tolist(),
        )

    def _text(
        self, d: Draws, i: int, partition: int, zh: bool, length: int
    ) -> tuple[str, list[int]]:
        """Text i of the draws: about ``length`` characters, and the ids of its content words."""
        words = self.zh_words if zh else EN_WORDS
        offset = 0 if zh else len(self.zh_words)
        pool = d.zh[i] if zh else d.en[i]
        topical, picks, stops, stop_here = d.topical[i], d.picks[i], d.stops[i], d.stop_here[i]
        topics = self.topics[0 if zh else 1][partition].tolist()
        parts: list[str] = []
        ids: list[int] = []
        size = 0
        for k in range(WORDS_PER_TEXT):
            if not zh and stop_here[k]:
                word = EN_STOP[stops[k]]
            else:
                wid = topics[picks[k]] if topical[k] else pool[k]
                word = words[wid]
                ids.append(offset + wid)
            parts.append(word)
            size += len(word) + (0 if zh else 1)
            if size >= length:
                break
        if zh:
            return "".join(parts), ids
        text = " ".join(parts)
        return text[:1].upper() + text[1:] + ".", ids

    @cached_property
    def _zipf_zh(self) -> npt.NDArray[np.float64]:
        return zipf(len(self.zh_words))

    @cached_property
    def _zipf_en(self) -> npt.NDArray[np.float64]:
        return zipf(len(EN_WORDS))

    def _vectors(self, rng: np.random.Generator, word_ids: list[list[int]]) -> Vectors:
        """Each text's vector: its words' directions summed, plus noise, normalised."""
        out = np.empty((len(word_ids), self.dim), dtype=np.float32)
        table = self.word_vectors
        for i, ids in enumerate(word_ids):
            base = table[ids].sum(axis=0) if ids else np.zeros(self.dim, dtype=np.float32)
            out[i] = base / max(1.0, np.sqrt(len(ids)))
        out += NOISE * unit(rng.standard_normal(out.shape, dtype=np.float32))
        return unit(out)

    # ------------------------------------------------------------------ rows

    def chunks(self, size: int = CHUNK) -> Iterator[Rows]:
        """Every memory, ``size`` at a time, the same on every call."""
        for start in range(0, self.rows, size):
            yield self.chunk(start, min(size, self.rows - start))

    def chunk(self, start: int, n: int) -> Rows:
        rng = np.random.default_rng([self.seed, 6, start])
        partitions = self.order[start : start + n].astype(np.int64)
        zh = (rng.random(n) < ZH_SHARE).tolist()
        zh_len = np.clip(rng.lognormal(ZH_LENGTH[0], ZH_LENGTH[1], n), ZH_LENGTH[2], ZH_LENGTH[3])
        en_len = np.clip(rng.lognormal(EN_LENGTH[0], EN_LENGTH[1], n), EN_LENGTH[2], EN_LENGTH[3])
        draws = self._draws(rng, n)
        texts: list[str] = []
        word_ids: list[list[int]] = []
        for i in range(n):
            length = int(zh_len[i] if zh[i] else en_len[i])
            text, ids = self._text(draws, i, int(partitions[i]), zh[i], length)
            texts.append(text)
            word_ids.append(ids)
        vectors = self._vectors(rng, word_ids)
        importance = np.asarray(rng.integers(1, 11, n), dtype=np.int64)
        categories = [CATEGORIES[k] for k in rng.integers(0, len(CATEGORIES), n).tolist()]
        sources = ["user" if x < 0.2 else "auto" for x in rng.random(n).tolist()]
        tag_count = rng.choice(3, n, p=[0.7, 0.2, 0.1]).tolist()
        tag_ids = rng.integers(0, len(TAGS), (n, 2)).tolist()
        tags = [sorted({TAGS[t] for t in tag_ids[i][: tag_count[i]]}) for i in range(n)]
        # oldest first: row i of N was created MAX_AGE_DAYS x (N - i) / N days before now
        created = [
            self.now - timedelta(days=MAX_AGE_DAYS * (self.rows - (start + i)) / self.rows)
            for i in range(n)
        ]
        return Rows(
            start=start,
            ids=[rng.bytes(16).hex() for _ in range(n)],
            partitions=partitions,
            texts=texts,
            tokens=[search_tokens(t) for t in texts],
            vectors=vectors,
            importance=importance,
            categories=categories,
            sources=sources,
            tags=tags,
            created=created,
        )

    def memo(self, p: int) -> str:
        """A memo of a few hundred characters for partition p (the L1 note)."""
        rng = np.random.default_rng([self.seed, 7, p])
        lines = int(rng.integers(3, 9))
        draws = self._draws(rng, lines)
        texts = [self._text(draws, i, p, True, 40)[0] for i in range(lines)]
        return "\n".join(f"- {line}" for line in texts)

    # ------------------------------------------------------------------ queries

    def queries(self, partitions: list[int], n: int, *, seed: int = 8) -> list[Query]:
        """n chat queries, the i-th in partitions[i % len]: 6 Chinese characters or about 30
        English ones, drawn like the partition's memories (its topics, the same words)."""
        rng = np.random.default_rng([self.seed, seed])
        out: list[Query] = []
        raw: list[tuple[int, str, list[int]]] = []
        draws = self._draws(rng, n)
        zh_flags = (rng.random(n) < ZH_SHARE).tolist()
        for i in range(n):
            p = partitions[i % len(partitions)]
            zh = zh_flags[i]
            text, ids = self._text(draws, i, p, zh, 6 if zh else 30)
            raw.append((p, text, ids))
        vectors = self._vectors(rng, [ids for _, _, ids in raw])
        for (p, text, _ids), vector in zip(raw, vectors, strict=True):
            out.append(Query(p, text, search_tokens(text), vector))
        return out
