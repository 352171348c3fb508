"""LLM translation on llama.cpp with KV-cache rewind (see prompt.py for the layout).

Per update: the prompt is rebuilt from segments; `KVCache.sync` keeps the longest common token
prefix (instruction, context, the unchanged part of the source, the committed target when the
source did not grow) and evaluates only the rest; the tentative tail is then generated greedily
within a small token budget, so an update's cost is bounded whatever the stream's length.

The prompt always fits the context with room for the generation budget: when it would not, the
oldest context sentences go first, then the start of the current sentence (after the instruction
prefix, which stays as the attention sink); a budget larger than what is left is reduced. Source
and target text are tokenised as plain text (no control tokens), the layout's own markup with its
special tokens.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from .hypothesis import Hypothesis
from .languages import LLM_PAIRS, check_pair
from .llama import Generation, KVCache, LlamaModel, LlamaOptions
from .metrics import copy_run_start, looks_copied, starts_as_copy
from .prompt import ChatLayout, FewShotLayout


@dataclass(frozen=True)
class LlmConfig:
    """Options of the LLM translators ("gemma-270m", "gguf")."""

    model: str = "gemma-270m"  # an embedded model name or a path to any GGUF file
    prompt: str = "auto"  # "auto" (chat template when the model has one), "few-shot", "chat"
    threads: int | None = None  # None: the registry's thread budget (speech.budget)
    n_ctx: int = 2048
    context_sentences: int = 1  # finished sentences kept after the instruction prefix
    max_tentative_tokens: int = 10  # generation budget of an update (bounds update time)
    max_sentence_tokens: int = 160  # budget to finish a sentence (bounds a looping model)
    examples: tuple[tuple[str, str], ...] = ()  # few-shot pairs; () = built-in ones for the pair
    # "auto": a SentencePiece model runs from a copy whose vocabulary keeps only Latin-script
    # tokens (models/gguf_vocab.py: same tokens for our languages' text, a 38 % smaller output
    # layer for Gemma, 1.3x faster generation); other models keep theirs. "latin", "full": force.
    vocab: str = "auto"
    retry_copies: bool = True  # a sentence start that repeats the source: retry another first token
    hold_copies: bool = True  # a copy the retry kept (or too short to judge) is never committed early
    device: str = "cpu"  # "cpu", "cuda" (every layer offloaded by llama.cpp) or "auto" (speech.devices)
    # Opt-in batching across sessions (translate/llama_batch.py): > 0 puts up to this many streams
    # in one llama context and gathers their decodes; outputs can then depend on the batch.
    batch_sessions: int = 0
    batch_window_s: float = 0.02  # the longest a decode waits for the other streams' decodes


class LlmTranslator:
    """A loaded model shared read-only; `open(source, target)` makes one stream's state."""

    pairs = LLM_PAIRS

    def __init__(self, config: LlmConfig, model: LlamaModel) -> None:
        self.config = config
        self.model = model

    @property
    def name(self) -> str:
        return self.model.path.name

    def open(self, source: str, target: str, examples: tuple[tuple[str, str], ...] | None = None) -> "LlmStream":
        check_pair(source, target, self.pairs, "the LLM translator")
        from .examples import builtin_examples

        ex = examples if examples is not None else (self.config.examples or builtin_examples(source, target))
        style = self.config.prompt
        if style == "auto":
            style = "chat" if self.model.chat_template else "few-shot"
        if style == "chat":
            if not self.model.chat_template:
                raise ValueError(f"{self.model.path} has no chat template; use prompt='few-shot'")
            layout: FewShotLayout | ChatLayout = ChatLayout(source, target, ex, self.model.render_chat)
        elif style == "few-shot":
            layout = FewShotLayout(source, target, ex)
        else:
            raise ValueError(f"unknown prompt style {style!r}; use auto, few-shot or chat")
        return LlmStream(self.model, layout, self.config)


@dataclass
class LlmStream:
    model: LlamaModel
    layout: FewShotLayout | ChatLayout
    config: LlmConfig
    cache: KVCache = field(init=False)
    context: deque = field(init=False)
    _memo: dict[tuple[str, tuple[str, ...]], list[int]] = field(default_factory=dict)
    shrunk: int = 0  # updates whose prompt was cut to fit the context

    def __post_init__(self) -> None:
        self.cache = self.model.new_cache()
        self.context = deque(maxlen=max(self.config.context_sentences, 0))  # maxlen 0 keeps none
        self._prefix = self.model.tokenize(self.layout.prefix(), bos=True)

    def _tokens(self, text: str, user: Sequence[str] = ()) -> list[int]:
        # Memoised for the segments that repeat (context sentences); bounded by clearing.
        key = (text, tuple(user))
        toks = self._memo.get(key)
        if toks is None:
            if len(self._memo) > 64:
                self._memo.clear()
            toks = self._memo[key] = self._encode(text, user)
        return toks

    def _encode(self, text: str, user: Sequence[str]) -> list[int]:
        """Tokens of a rendered segment in which the `user` strings (in order) are plain text:
        the markup around them may hold special tokens, the user text never does. A user
        string's leading spaces go with it, as the tokenizer puts a word's space in its token."""
        tokens: list[int] = []
        pos = 0
        for part in user:
            at = text.find(part, pos) if part else -1
            if at < 0:
                continue  # not rendered verbatim (empty, or changed by a template): nothing to protect
            start = at
            while start > pos and text[start - 1] == " ":
                start -= 1
            if start > pos:
                tokens += self.model.tokenize(text[pos:start])
            tokens += self.model.tokenize(text[start : at + len(part)], special=False)
            pos = at + len(part)
        if pos < len(text):
            tokens += self.model.tokenize(text[pos:])
        return tokens

    def prompt(self, source: list[str], committed: list[str]) -> list[int]:
        tokens = list(self._prefix)
        for src, tgt in self.context:
            tokens += self._tokens(self.layout.context(src, tgt), (src, tgt))
        src = " ".join(source)
        tokens += self._tokens(self.layout.current(src), (src,))
        if committed:
            tokens += self.model.tokenize(self.layout.committed(committed), special=False)
        return tokens

    def fitted_prompt(self, source: list[str], committed: list[str], budget: int) -> tuple[list[int], int]:
        """The prompt and generation budget, cut to fit the context (see the module's doc)."""
        room = self.cache.n_ctx
        prompt = self.prompt(source, committed)
        while len(prompt) + budget > room and self.context:
            self.context.popleft()  # the oldest finished sentence: its translation is out already
            self.shrunk += 1
            prompt = self.prompt(source, committed)
        if len(prompt) + budget > room:
            self.shrunk += 1
            budget = max(1, min(budget, room // 4))
            cut = len(prompt) + budget - room
            if cut > 0:
                head = len(self._prefix)
                prompt = prompt[:head] + prompt[head + cut :]
            if len(prompt) + budget > room:  # the instruction prefix alone is too long for n_ctx
                prompt = prompt[:1] + prompt[len(prompt) + budget - room + 1 :]
        return prompt, budget

    def hypothesis(self, source: list[str], committed: list[str], complete: bool) -> Hypothesis:
        if not source:
            return Hypothesis(list(committed), len(committed))
        budget = self.config.max_sentence_tokens if complete else self.config.max_tentative_tokens
        prompt, budget = self.fitted_prompt(source, committed, budget)
        rewound, evaluated = self.cache.sync(prompt)
        gen = self.cache.generate(budget, stop=self._stop)
        text = self.model.detokenize(gen.tokens)
        generated = len(gen.tokens)
        if self.config.retry_copies and gen.tokens:
            gen, text, again = self._avoid_copy(prompt, source, committed, gen, text, budget)
            evaluated += again
        words = list(committed) + text.split()
        # Unfinished source: the last word may be cut by the budget, or closes the sentence early
        # (the model thinks the source ended): never vouch for it.
        stable = len(words) if complete else max(len(committed), len(words) - 1)
        if self.config.hold_copies and not complete:
            # Never vouch for a copy of the source that the retry could not avoid: LocalAgreement
            # would commit it as soon as two updates agree on it (en->de: 15 % of sentences).
            run = copy_run_start(source, words, start=len(committed))
            if run is not None:
                stable = max(len(committed), min(stable, run))
            elif not committed and starts_as_copy(" ".join(source), text):
                stable = 0  # too few source words to tell "In" -> "In" from a copy
        return Hypothesis(
            words,
            stable,
            tokens_evaluated=evaluated + generated,
            rewound=rewound,
            generated=generated,
            looped=gen.looped,
            cache_tokens=len(self.cache.tokens),
            copied=complete and looks_copied(" ".join(source), " ".join(words)),
        )

    def _avoid_copy(self, prompt: list[int], source: list[str], committed: list[str], gen: Generation,
                    text: str, budget: int) -> tuple[Generation, str, int]:
        """Generate again from where the output starts repeating the source, with the best other
        token there; keep the retry unless it copies at the same place. Gemma sometimes repeats
        an English source instead of translating it, from the first word or after a word or two
        both languages share ("In 2017, Siminoff appeared on..."): that token decides
        (docs/translation.md: copy rate and chrF with and without). Returns the generation, its
        text and the tokens the retry evaluated."""
        src = " ".join(source)
        whole = not committed and looks_copied(src, text)
        run = 0 if whole else copy_run_start(source, text.split())
        if run is None:
            return gen, text, 0
        at = self._token_of_word(gen.tokens, run)
        _, again = self.cache.sync(prompt + gen.tokens[:at])
        retry = self._generate_avoiding(gen.tokens[at], budget - at)
        tokens = gen.tokens[:at] + retry.tokens
        retried = self.model.detokenize(tokens)
        cost = again + len(retry.tokens)
        if whole and looks_copied(src, retried):
            return gen, text, cost
        later = copy_run_start(source, retried.split())
        if not whole and later is not None and later <= run:
            return gen, text, cost
        return Generation(tokens, retry.stopped, retry.looped), retried, cost

    def _token_of_word(self, tokens: list[int], word: int) -> int:
        """Index of the token that starts the `word`-th word of the detokenized `tokens`."""
        for j in range(len(tokens)):
            if len(self.model.detokenize(tokens[: j + 1]).split()) > word:
                return j
        return len(tokens) - 1

    def _stop(self, token: int) -> bool:
        return "\n" in self.model.piece(token)

    def _generate_avoiding(self, banned: int, budget: int) -> Generation:
        """Greedy generation whose first token is the best one other than `banned`."""
        import numpy as np

        logits = np.asarray(self.cache.logits(), dtype=np.float32)
        logits[banned] = -np.inf
        first = int(np.argmax(logits))
        if self.model.is_end(first) or self._stop(first):
            return Generation([], stopped=True)
        self.cache.feed([first])
        rest = self.cache.generate(budget - 1, stop=self._stop)
        return Generation([first] + rest.tokens, rest.stopped, rest.looped)

    def end_sentence(self, source: list[str], target: list[str]) -> None:
        self.context.append((" ".join(source), " ".join(target)))

    def reset(self) -> None:
        self.context.clear()

    def close(self) -> None:
        self.cache.close()


def load_llm(config: LlmConfig, registry) -> LlmTranslator:  # noqa: ANN001 - speech.registry.Registry
    from speech.models.gguf import resolve_gguf

    if not config.model:
        raise ValueError("the gguf translator needs a model path: --model PATH.gguf")
    path = model_file(resolve_gguf(config.model), config.vocab)
    from speech.devices import llm_gpu_layers

    options = LlamaOptions(n_ctx=config.n_ctx, threads=registry.threads("llama", config.threads),
                           n_gpu_layers=llm_gpu_layers(config.device), batch_sessions=config.batch_sessions,
                           batch_window_s=config.batch_window_s)
    model = registry.shared(("llama", str(path), options), lambda: LlamaModel(path, options))
    return LlmTranslator(config, model)


def model_file(path, vocab: str):  # noqa: ANN001, ANN201 - Path -> Path
    """The file to load for `vocab` ("auto", "latin", "full"): `path` or its Latin-vocabulary copy."""
    from speech.models.gguf_vocab import NotTrimmable, latin_vocab_path

    if vocab not in ("auto", "latin", "full"):
        raise ValueError(f"unknown vocab {vocab!r}; use auto, latin or full")
    if vocab == "full":
        return path
    try:
        return latin_vocab_path(path)
    except NotTrimmable as e:
        if vocab == "auto":
            return path
        raise ValueError(f"{e}; use vocab=full") from e


def installed_pairs(name: str, options: dict) -> tuple[tuple[str, str], ...]:
    """The graph's LLM edges (graph.py): the few-shot languages; "gguf" only with a model path."""
    if name == "gguf" and not options.get("model"):
        return ()
    return LLM_PAIRS
