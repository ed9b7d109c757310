"""Adapting a checkpoint to a domain's words: new WordPieces in the vocab, resized embeddings and MLM bias,
written in the checkpoint's own format so that pre-training and fine-tuning continue from it unchanged."""

import dataclasses
import logging
import os
import tempfile

from keras_bert import outputs
from keras_bert.checkpoints import (
    read_checkpoint,
    save_google_checkpoint,
    save_huggingface,
    save_pretrained,
)
from keras_bert.checkpoints.vocab_resize import resize_vocab
from keras_bert.models.assembly import assemble
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrained import resolve_pretrained
from keras_bert.tasks.pretraining.model import BertPretrainer
from keras_bert.text import vocab as vocab_lib
from keras_bert.text.vocab_extension import choose_new_tokens, extend_vocab, tokens_per_word
from keras_bert.text.vocab_learner import count_words

logger = logging.getLogger("keras_bert")

GOOGLE_PREFIX = "bert_model.ckpt"


@dataclasses.dataclass(frozen=True)
class ExtendedCheckpoint:
    """What `extend_checkpoint_vocab` wrote: `path` (the checkpoint to pass as init_checkpoint), the
    `extension` (new vocab, new ids, their old pieces) and the domain's mean WordPiece tokens per word
    with the old and the new vocab."""

    path: str
    extension: object
    tokens_per_word_before: float
    tokens_per_word_after: float


def extend_checkpoint_vocab(init_checkpoint, files_or_lines, num_new_tokens, output_dir, lower_case=None,
                            max_lines=None, min_frequency=2, overwrite=False):
    """Adds the `num_new_tokens` WordPieces that shorten the domain text most to a checkpoint's vocab.

    Args:
        init_checkpoint: a checkpoint in any supported format, with `vocab.txt` beside it.
        files_or_lines: the domain text: a path or glob, a list of them, or an iterable of lines.
        num_new_tokens: int, how many pieces to add (fewer when no more save a token).
        output_dir: directory to write; it gets `vocab.txt` and the weights + config in the format of
            `init_checkpoint` (Google `bert_model.ckpt` + `bert_config.json`, Hugging Face `config.json` +
            `model.safetensors`, or our `model.keras`; other files of the input, such as tokenizer.json, are
            not copied).
        lower_case: whether the checkpoint's tokenizer is uncased; None: as the checkpoint states (its saved
            tokenizer, tokenizer_config.json or tokenizer.json), else True. A contradiction is a ValueError.
        max_lines: read at most this many lines of the domain text.
        min_frequency: a new piece must occur at least this many times in the domain text.
        overwrite: replace a non-empty `output_dir` whole (without it such a directory is refused, before
            any work, as is one that is, holds or lies inside `init_checkpoint`: `keras_bert.outputs.claim`).

    Returns:
        an `ExtendedCheckpoint`. The new tokens fill `[unusedK]` slots first, then are appended; their
        word-embedding and MLM-bias rows are the mean of those of their old pieces; every old row is kept,
        so a text whose tokenization uses no new token gets the old ids and the old encoder outputs. Heads
        are written when `init_checkpoint` has them.
    """
    init_checkpoint, output_dir = os.fspath(init_checkpoint), os.fspath(output_dir)
    pretrained = resolve_pretrained(init_checkpoint, lower_case=lower_case)  # vocab size and casing checked
    init_checkpoint = pretrained.path  # a hub name's local directory
    if pretrained.preprocessor is None:
        raise FileNotFoundError(f"{init_checkpoint}: no vocab.txt beside the checkpoint; expected the "
                                f"WordPiece vocab the checkpoint was trained with")
    vocab_file = pretrained.preprocessor.tokenizer.vocab_file
    with outputs.claim(output_dir, [init_checkpoint, vocab_file], overwrite):
        return _extend(init_checkpoint, pretrained, files_or_lines, num_new_tokens, output_dir, overwrite,
                       max_lines, min_frequency)


def _extend(init_checkpoint, pretrained, files_or_lines, num_new_tokens, output_dir, overwrite, max_lines,
            min_frequency):
    """`extend_checkpoint_vocab` once its output is claimed (`pretrained`: its `resolve_pretrained`)."""
    vocab = list(pretrained.preprocessor.tokenizer.vocab)
    config, weights = read_checkpoint(init_checkpoint, pretrained.format, pretrained.config)
    word_counts = count_words(files_or_lines, lower_case=pretrained.lower_case, max_lines=max_lines)
    chosen = dict(choose_new_tokens(word_counts, vocab, num_new_tokens, min_frequency=min_frequency))
    extension = extend_vocab(vocab, list(chosen), tokens_saved=chosen)
    config, weights = resize_vocab(config, weights, len(extension.vocab), extension.pieces)
    model_class = BertPretrainer if any(name.startswith("cls/") for name in weights.arrays) else BertEncoder
    resized = dataclasses.replace(pretrained, config=config, preprocessor=None, head=None)
    model = assemble(resized, model_class, weights=weights)
    path = _save(model, pretrained.format, output_dir, extension.vocab, overwrite)
    logger.info("%s: %d new tokens (%d in [unusedK] slots, %d appended), vocab_size %d -> %d",
                path, len(chosen), extension.num_unused_filled, len(chosen) - extension.num_unused_filled,
                len(vocab), len(extension.vocab))
    return ExtendedCheckpoint(path=path, extension=extension,
                              tokens_per_word_before=tokens_per_word(word_counts, vocab),
                              tokens_per_word_after=tokens_per_word(word_counts, extension.vocab))


def _save(model, fmt, output_dir, vocab, overwrite):
    """Writes `model` + `vocab` to `output_dir` in the format `fmt`; returns the checkpoint path."""
    # The writers copy vocab.txt in with the rest of the directory they rename into place.
    with tempfile.TemporaryDirectory(prefix="keras_bert-vocab-") as tmp:
        vocab_file = os.path.join(tmp, "vocab.txt")
        vocab_lib.save_vocab(vocab, vocab_file)
        if fmt == "google":
            return save_google_checkpoint(model, os.path.join(output_dir, GOOGLE_PREFIX), vocab_file,
                                          overwrite)
        if fmt == "huggingface":
            return save_huggingface(model, output_dir, vocab_file, overwrite)
        return save_pretrained(model, output_dir, vocab_file, overwrite)
