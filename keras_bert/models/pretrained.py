"""The text preprocessing a checkpoint comes with: the `vocab.txt` beside it and the casing its own files
state, packed to a sequence length — what `from_pretrained` gives a model so it takes raw strings."""

import json
import logging
import os
import zipfile

import keras

from keras_bert.checkpoints import (
    find_lower_case,
    find_vocab_file,
    keras_file,
    keras_hub_head,
    keras_hub_text,
    load_keras_model,
    split_model,
)
from keras_bert.text import BertPreprocessor, BertTokenizer

logger = logging.getLogger("keras_bert")

# The paper's fine-tuning length (run_classifier's max_seq_length); capped at the position embeddings.
DEFAULT_SEQ_LENGTH = 128


def checkpoint_lower_case(path, lower_case=None):
    """The casing of the checkpoint at `path`: what its files state (HF `tokenizer_config.json`
    `do_lower_case`), else `lower_case`, else True. Raises ValueError naming both values when `lower_case`
    contradicts the checkpoint's files."""
    stated = find_lower_case(path)
    if stated is None:
        return True if lower_case is None else bool(lower_case)
    if lower_case is not None and bool(lower_case) != stated:
        raise ValueError(f"lower_case={lower_case} but {path} states do_lower_case={stated} "
                         "(tokenizer_config.json); a model must be fed text cased as in its pre-training")
    return stated


def sequence_length(config, seq_length=None):
    """`seq_length` (default: DEFAULT_SEQ_LENGTH capped at the model's max_position_embeddings); ValueError
    when it exceeds the position embeddings."""
    if seq_length is None:
        return min(DEFAULT_SEQ_LENGTH, config.max_position_embeddings)
    if not 3 <= int(seq_length) <= config.max_position_embeddings:
        raise ValueError(f"seq_length={seq_length}; expected 3 <= seq_length <= the model's "
                         f"max_position_embeddings={config.max_position_embeddings}")
    return int(seq_length)


def pretrained_preprocessor(path, config, seq_length=None, casing=True):
    """A `BertPreprocessor` of the `vocab.txt` beside the checkpoint at `path` (lower-cased when `casing`,
    the checkpoint's casing that `checkpoint_lower_case` gives; length as `sequence_length`), or None when
    there is no vocab.txt. A KerasHub preset's tokenizer.json and preprocessor.json (its character rules,
    strip_accents, sequence_length) are honoured. Raises ValueError naming the file when its size is not the model's
    `config.vocab_size`."""
    vocab_file = find_vocab_file(path)
    if vocab_file is None:
        logger.info("%s: no vocab.txt beside the checkpoint; the model takes token ids only", path)
        return None
    keras_hub = keras_hub_text(path)  # a KerasHub preset: its character rules and packed length too
    if keras_hub is not None and seq_length is None:
        seq_length = keras_hub["seq_length"]
    rules = {} if keras_hub is None else {"strip_accents": keras_hub["strip_accents"], "rules": keras_hub["rules"]}
    tokenizer = BertTokenizer(vocab_file, lower_case=casing, **rules)
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{vocab_file} has {tokenizer.vocab_size} tokens but the checkpoint's vocab_size is "
                         f"{config.vocab_size}")
    return BertPreprocessor(tokenizer, sequence_length(config, seq_length))


def resized(preprocessor, config, seq_length=None, lower_case=None):
    """`preprocessor` (a model's own) packed to `seq_length` when one is given; ValueError when
    `lower_case` contradicts its tokenizer's casing."""
    tokenizer = preprocessor.tokenizer
    if lower_case is not None and bool(lower_case) != tokenizer.lower_case:
        raise ValueError(f"lower_case={lower_case} but the saved model's tokenizer has "
                         f"lower_case={tokenizer.lower_case}")
    if seq_length is None or int(seq_length) == preprocessor.seq_length:
        return preprocessor
    return BertPreprocessor(tokenizer, sequence_length(config, seq_length))


def saved_config(path):
    """The serialized model ({"class_name", "config", ...}) of the `.keras` save at `path` (the file or a
    directory holding model.keras), read without building the model; None for the other formats."""
    model_file = keras_file(os.fspath(path)) if path else None
    if model_file is None or not zipfile.is_zipfile(model_file):
        return None
    with zipfile.ZipFile(model_file) as archive:
        return json.loads(archive.read("config.json"))


def saved_preprocessing(path):
    """(class name, preprocessor) of the `.keras` save at `path`, from one read of its config: the model's
    class and the `BertPreprocessor` it was trained with (vocab and casing inside; None when it has none).
    (None, None) for the other checkpoint formats."""
    saved = saved_config(path) or {}
    preprocessor = saved.get("config", {}).get("preprocessor")
    if preprocessor is not None:
        preprocessor = keras.saving.deserialize_keras_object(preprocessor)
    return saved.get("class_name"), preprocessor


def load_saved_model(path):
    """The whole keras_bert model of a `.keras` save at `path` (the file or a directory holding
    model.keras), or None for the other checkpoint formats."""
    return load_keras_model(path) if keras_file(os.fspath(path)) else None


def with_pretrained_preprocessor(model, path, seq_length=None, lower_case=None, casing=None):
    """`model` (encoder or task model, loaded from the checkpoint at `path`) with a preprocessor: the one it
    has (packed to `seq_length` if given), else the one of the vocab.txt beside `path` (None if absent),
    cased `casing` when the caller has `checkpoint_lower_case(path, lower_case)` already, else as it says.
    Returns `model`."""
    config = split_model(model)[0].config
    if model.preprocessor is not None:
        model.preprocessor = resized(model.preprocessor, config, seq_length, lower_case)
    else:
        casing = checkpoint_lower_case(path, lower_case) if casing is None else casing
        model.preprocessor = pretrained_preprocessor(path, config, seq_length, casing)
    return model


def pretrained_head_args(cls, path, kwargs):
    """`kwargs` completed with the head arguments of a KerasHub BertTextClassifier preset at `path`
    (num_classes, dropout) when `cls` is the BertClassifier it maps onto; else `kwargs`."""
    head = keras_hub_head(path) if cls.task_kind == "classifier" else None
    if head is None:
        return kwargs
    return {"num_classes": head["num_classes"], "dropout": head["dropout"], **kwargs}


def load_pretrained_head(model, path):
    """Copies a KerasHub BertTextClassifier preset's logits layer into a BertClassifier `model` whose
    num_classes matches (a different num_classes keeps its fresh head, with a warning)."""
    head = keras_hub_head(path) if model.task_kind == "classifier" else None
    if head is None:
        return
    if head["num_classes"] != model.num_classes:
        logger.warning("%s holds a %d-class classifier; num_classes=%d asked for, so the head starts fresh",
                       path, head["num_classes"], model.num_classes)
        return
    layer = model.get_layer("classifier")
    layer.kernel.assign(head["kernel"])
    layer.bias.assign(head["bias"])
