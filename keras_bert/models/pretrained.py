"""One way a checkpoint enters: `resolve_pretrained(path, ...)` detects its format, checks its files and
reads what it states (config, KerasHub classifier head, text preprocessing: vocab, casing, KerasHub or
Google rules, sequence length; label names) into a frozen `Pretrained`, before any model is built. The
models' `from_pretrained`, the recipes' --init_checkpoint and the export CLIs' --model_path all go
through it; `keras_bert.models.assembly.assemble` then reads the weights (once) and builds the model. This
module knows no model class."""

from __future__ import annotations

import dataclasses
import logging
import os

import keras

from keras_bert.checkpoints import (
    CheckpointError,
    detect_format,
    find_lower_case,
    find_vocab_file,
    huggingface_head,
    huggingface_text,
    keras_file,
    keras_hub_head,
    keras_hub_text,
    read_config,
    saved_config,
)
from keras_bert.checkpoints.files import TOKENIZER_CONFIG_FILE, checkpoint_directory
from keras_bert.checkpoints.huggingface_tokenizer import tokenizer_max_length
from keras_bert.checkpoints.names import local_checkpoint
from keras_bert.checkpoints.sentence_transformers import sentence_max_seq_length, sentence_pooling
from keras_bert.config import BertConfig
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.vocab import load_vocab
from keras_bert.textfiles import read_json
from keras_bert.training.defaults import FINETUNING

logger = logging.getLogger("keras_bert")

# The paper's fine-tuning length (run_classifier's max_seq_length); capped at the position embeddings.
DEFAULT_SEQ_LENGTH = FINETUNING.max_seq_length
LABELS_FILE = "labels.json"  # beside a fine-tuned model.keras: {"labels": [...]}


@dataclasses.dataclass(frozen=True)
class Pretrained:
    """What the checkpoint at `path` states, read and checked by `resolve_pretrained`.

    Attributes:
        path: the checkpoint's local path (a file, directory or TF1 prefix; a hub name's directory).
        format: "keras", "keras_hub", "huggingface" or "google".
        config: the encoder's `BertConfig`.
        preprocessor: the `BertPreprocessor` raw text goes through (a `.keras` save's own, else the vocab
            beside `path` cased as the checkpoint states), or None: the model takes token ids only.
        lower_case: the casing in force (the preprocessor's; else what was asked, else True).
        class_name: the model class of a `.keras` save, else None.
        labels: the label names a `.keras` save carries (or its labels.json), or a Hugging Face task
            checkpoint's id2label names, else None.
        head: a task head to load: a KerasHub BertTextClassifier's (`keras_hub_head`) or a Hugging Face
            BertFor* checkpoint's (`huggingface_head`): {"task_kind", "layer", "kernel", "bias", "dropout",
            and "num_classes" / "labels" for classifiers}, else None.
        trained_preprocessor: True when `preprocessor` is the one a `.keras` save was trained with (not
            built from a vocab file).
        sentence_pooling: (pooling "cls" | "mean", normalize) of a sentence-transformers directory
            (modules.json), the encoder's default sentence embedding; else None (a `.keras` save's encoder
            carries its own).
    """

    path: str
    format: str
    config: BertConfig
    preprocessor: BertPreprocessor | None
    lower_case: bool
    class_name: str | None = None
    labels: list | None = None
    head: dict | None = None
    trained_preprocessor: bool = False
    sentence_pooling: tuple | None = None


def resolve_pretrained(path, *, seq_length=None, lower_case=None, vocab_file=None,
                       default_seq_length=DEFAULT_SEQ_LENGTH) -> Pretrained:
    """The `Pretrained` of the checkpoint at `path` (Google TF1, Hugging Face, KerasHub preset, or a
    keras_bert save: `.keras` file or directory), every override given applied to it, whatever the format.

    Args:
        path: the checkpoint: a local path, or a hub name (`keras_bert.checkpoints.names.local_checkpoint`:
            "bert-base-uncased", "org/name", "hf://org/name@rev", "bert_base_en_uncased", "kaggle://...").
        seq_length: packed length; default: what the checkpoint states (`stated_seq_length`: a `.keras`
            save's own, a KerasHub preprocessor.json's, a sentence-transformers sentence_bert_config.json's,
            a Hugging Face tokenizer_config.json's model_max_length), else `default_seq_length` capped at
            max_position_embeddings. A value above max_position_embeddings is a ValueError naming both.
        lower_case: casing; None means the checkpoint's (a `.keras` save's tokenizer, HF
            tokenizer_config.json `do_lower_case`, KerasHub tokenizer.json `lowercase`), else True. A value
            that contradicts the checkpoint is a ValueError naming both.
        vocab_file: a vocab.txt to use instead of the one beside `path`; a `.keras` save keeps its own,
            and a given one of another vocabulary is a ValueError naming both (`check_agrees`).
        default_seq_length: the packed length when neither `seq_length` nor the checkpoint states one.

    Raises FileNotFoundError / CheckpointError / ValueError naming the file (and key) that is wrong.
    """
    path = local_checkpoint(path)  # a hub name -> its cached (or downloaded) directory
    fmt = detect_format(path)
    config = read_config(path, fmt)
    if seq_length is not None:
        seq_length = check_seq_length(config, seq_length)
    if fmt == "keras":
        return _resolve_saved(path, config, seq_length, lower_case, vocab_file, default_seq_length)
    if fmt == "keras_hub":
        stated = keras_hub_text(path)  # None: a preset without tokenizer.json
        head = keras_hub_head(path)
    elif fmt == "huggingface":
        head = huggingface_head(path)
        stated = _huggingface_tokenizer(path) if vocab_file is None else None
    else:
        stated, head = None, None
    casing = checkpoint_lower_case(path, lower_case, stated)
    seq_length = seq_length or stated_seq_length(path, config, stated, default_seq_length)
    preprocessor = _vocab_preprocessor(path, config, seq_length, casing, vocab_file, stated)
    return Pretrained(path, fmt, config, preprocessor, casing, labels=(head or {}).get("labels"), head=head,
                      sentence_pooling=_sentence_pooling(path))


def _sentence_pooling(path):
    """`sentence_pooling` of the checkpoint directory `path`, or None: not a directory, not a
    sentence-transformers one, or one whose pooling is not served (a warning names it; the encoder still
    loads, e.g. to fine-tune)."""
    if not os.path.isdir(path):
        return None
    try:
        return sentence_pooling(path)
    except CheckpointError as e:
        logger.warning("%s; its encoder serves no sentence_embedding unless a pooling is passed", e)
        return None


def _resolve_saved(path, config, seq_length, lower_case, vocab_file, default_seq_length):
    """`resolve_pretrained` of a `.keras` save: its own preprocessor (packed to `seq_length` when given;
    `vocab_file` and `lower_case` checked against it), else the vocab.txt beside it (or `vocab_file`)."""
    saved = saved_config(path)
    values = saved.get("config", {})
    own = values.get("preprocessor") or values.get("encoder", {}).get("config", {}).get("preprocessor")
    if own is None:
        casing = checkpoint_lower_case(path, lower_case)
        seq_length = seq_length or stated_seq_length(path, config, default=default_seq_length)
        preprocessor = _vocab_preprocessor(path, config, seq_length, casing, vocab_file)
    else:
        preprocessor = keras.saving.deserialize_keras_object(own)
        preprocessor.tokenizer.fill_from_keras_file(keras_file(path))  # its vocabulary: the file's asset
        if lower_case is not None and bool(lower_case) != preprocessor.tokenizer.lower_case:
            raise ValueError(f"lower_case={lower_case} but {keras_file(path)} was trained with "
                             f"lower_case={preprocessor.tokenizer.lower_case}")
        if vocab_file is not None:  # the same vocabulary as the model's, or refused: its own is kept
            given = BertTokenizer(vocab_file, lower_case=preprocessor.tokenizer.lower_case)
            check_agrees(preprocessor, BertPreprocessor(given, preprocessor.seq_length))
        if seq_length is not None and seq_length != preprocessor.seq_length:
            preprocessor = BertPreprocessor(preprocessor.tokenizer, seq_length)
        casing = preprocessor.tokenizer.lower_case
    return Pretrained(path, "keras", config, preprocessor, casing, class_name=saved.get("class_name"),
                      labels=saved_labels(keras_file(path), values), trained_preprocessor=own is not None)


def saved_labels(model_file, values):
    """The label names of the `.keras` file `model_file` whose serialized config is `values`: the model's
    own, else the labels.json beside it, else None."""
    if values.get("labels") is not None:
        return values["labels"]
    labels_file = os.path.join(os.path.dirname(model_file), LABELS_FILE)
    if not os.path.isfile(labels_file):
        return None
    labels = read_json(labels_file)
    if not isinstance(labels, dict) or not isinstance(labels.get("labels"), list):
        raise ValueError(f'{labels_file}: expected {{"labels": [...]}}')
    return labels["labels"]


def _huggingface_tokenizer(path):
    """`huggingface_text` of the tokenizer.json in the Hugging Face directory `path` (None: there is none),
    checked against the vocab.txt and tokenizer_config.json beside it: another vocabulary, or another
    casing, is a CheckpointError naming both files."""
    stated = huggingface_text(path)
    if stated is None:
        return None
    vocab_file = find_vocab_file(path)
    if vocab_file is not None:
        vocab, other = load_vocab(vocab_file), stated["vocabulary"]
        if vocab != other:
            index = next((i for i, (a, b) in enumerate(zip(vocab, other, strict=False)) if a != b),
                         min(len(vocab), len(other)))
            found = [f"{tokens[index]!r} at id {index}" if index < len(tokens) else f"{len(tokens)} tokens"
                     for tokens in (vocab, other)]
            raise CheckpointError(f"{vocab_file} has {found[0]} but {stated['source']} has {found[1]}; "
                                  f"expected the same vocabulary in both")
    lower_case = find_lower_case(path)
    if lower_case is not None and lower_case != stated["lower_case"]:
        raise CheckpointError(f"{os.path.join(checkpoint_directory(path), TOKENIZER_CONFIG_FILE)} states "
                              f"do_lower_case={lower_case} but {stated['source']} states "
                              f"normalizer.lowercase={stated['lower_case']}; expected the same casing in "
                              "both")
    return stated


def checkpoint_lower_case(path, lower_case=None, keras_hub=None):
    """The casing of the checkpoint at `path`: what its files state (HF `tokenizer_config.json`
    `do_lower_case`, or `keras_hub["lower_case"]`: a KerasHub preset's `keras_hub_text` or a Hugging Face
    `huggingface_text`, both read from a tokenizer.json), else `lower_case`,
    else True. Raises ValueError naming both values when `lower_case` contradicts the checkpoint's files."""
    stated = find_lower_case(path) if keras_hub is None else keras_hub["lower_case"]
    if stated is None:
        return True if lower_case is None else bool(lower_case)
    if lower_case is not None and bool(lower_case) != stated:
        source = "tokenizer_config.json" if keras_hub is None else "tokenizer.json"
        raise ValueError(f"lower_case={lower_case} but {path} states do_lower_case={stated} "
                         f"({source}); a model must be fed text cased as in its pre-training")
    return stated


def stated_seq_length(path, config, keras_hub=None, default=DEFAULT_SEQ_LENGTH):
    """The packed length the checkpoint at `path` states: `keras_hub["seq_length"]` (a KerasHub
    preprocessor.json's), else the sentence_bert_config.json `max_seq_length` of a sentence-transformers
    directory (what `SentenceTransformer.encode` truncates to), else the tokenizer_config.json
    `model_max_length` beside it (transformers' "no limit" placeholder ignored); else `default` capped at
    `config.max_position_embeddings`. A stated value above max_position_embeddings is a ValueError naming
    the file, key and limit."""
    directory = checkpoint_directory(path)
    stated = None
    if keras_hub and keras_hub.get("seq_length") is not None:
        stated = keras_hub["seq_length"], keras_hub["seq_length_source"]
    elif os.path.isdir(directory):
        stated = sentence_max_seq_length(directory) or tokenizer_max_length(directory)
    if stated is None:
        return min(int(default), config.max_position_embeddings)
    return check_seq_length(config, *stated)


def _vocab_preprocessor(path, config, seq_length, casing, vocab_file=None, stated=None):
    """A `BertPreprocessor` packing to `seq_length` of `vocab_file` (default: the vocab beside `path`; a
    KerasHub preset's assets/tokenizer/vocabulary.txt with its character rules; a Hugging Face
    tokenizer.json's vocabulary and accent rule, `stated` being `huggingface_text`), or None when there is
    none. The vocab's size is checked against `config` before a tokenizer is built."""
    stated = stated or {}
    vocab_file = vocab_file or stated.get("vocab_file") or find_vocab_file(path)
    vocabulary = stated.get("vocabulary") if vocab_file is None else None
    if vocab_file is None and vocabulary is None:
        logger.info("%s: no vocab.txt or tokenizer.json beside the checkpoint; the model takes token ids "
                    "only", path)
        return None
    check_vocab_size(config, len(vocabulary or load_vocab(vocab_file)), vocab_file or stated["source"])
    rules = {key: stated[key] for key in ("strip_accents", "rules") if key in stated}
    return BertPreprocessor(BertTokenizer(vocab_file, lower_case=casing, vocabulary=vocabulary, **rules),
                            seq_length)


def check_seq_length(config, seq_length=None, name="seq_length"):
    """`seq_length` as an int (None: DEFAULT_SEQ_LENGTH capped at `config.max_position_embeddings`); raises
    ValueError naming `name` (e.g. a flag or a file's key) unless 3 <= seq_length <=
    max_position_embeddings."""
    if seq_length is None:
        return min(DEFAULT_SEQ_LENGTH, config.max_position_embeddings)
    if not 3 <= int(seq_length) <= config.max_position_embeddings:
        raise ValueError(f"{name}={seq_length}; expected 3 <= seq_length <= the model's "
                         f"max_position_embeddings={config.max_position_embeddings}")
    return int(seq_length)


def check_vocab_size(config, vocab_size, vocab_file=None):
    """Raises ValueError when the vocab file's `vocab_size` tokens are not the `config.vocab_size` the
    model's embeddings have (`vocab_file`: the path, named in the message)."""
    if config.vocab_size != vocab_size:
        named = f" {vocab_file}" if vocab_file else ""
        raise ValueError(f"the model has vocab_size={config.vocab_size} but the vocab file{named} has "
                         f"{vocab_size} tokens")


def _vocab_source(tokenizer):
    return tokenizer.vocab_file or "its vocabulary"


def check_agrees(model_preprocessor, preprocessor):
    """Raises ValueError naming both values when `preprocessor` has another vocabulary (size, or the
    first differing token) or casing than `model_preprocessor`, the model's own."""
    own, other = model_preprocessor.tokenizer, preprocessor.tokenizer
    if other.vocab_size != own.vocab_size:
        raise ValueError(f"the vocab {_vocab_source(other)} has {other.vocab_size} tokens but the model was "
                         f"trained with {own.vocab_size} ({_vocab_source(own)})")
    if other.vocab != own.vocab:
        index = next(i for i, (a, b) in enumerate(zip(own.vocab, other.vocab, strict=True)) if a != b)
        raise ValueError(f"the vocab {_vocab_source(other)} has {other.vocab[index]!r} at id {index} but the "
                         f"model was trained with {own.vocab[index]!r} there ({_vocab_source(own)})")
    if other.lower_case != own.lower_case:
        raise ValueError(f"lower_case={other.lower_case} but the model was trained with "
                         f"lower_case={own.lower_case}")
