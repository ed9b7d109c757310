"""KerasHub BERT presets: the directory `keras_hub.models.BertBackbone.save_to_preset` writes, read and
written here without importing keras_hub.

    config.json          {"registered_name": "keras_hub>BertBackbone", "config": {vocabulary_size, ...}}
    model.weights.h5     Keras weights file (or model.weights.json + model_0000i.weights.h5 shards)
    tokenizer.json       keras_hub>BertTokenizer: lowercase, strip_accents, split, suffix_indicator, ...
    assets/tokenizer/vocabulary.txt
    metadata.json        versions, parameter count, date
    task.json, task.weights.h5, preprocessor.json   a task preset (the one a task folder declares,
                                                     `keras_bert.checkpoints.heads`: BertTextClassifier's
                                                     logits)

KerasHub's backbone computes GELU with the tanh approximation and LayerNorm with epsilon 1e-12 whatever
the checkpoint was trained with, so a preset reads as hidden_act="gelu_tanh"; writing an erf-GELU model
warns that KerasHub will compute it approximately. Its q/k/v kernels are [hidden, heads, head_size]
(EinsumDense): reshaped to and from Google's [hidden, hidden] here. A task preset's logits layer
(task.weights.h5) maps onto its task model's head Dense (`keras_hub_head`). A preset's tokenizer
loads as `BertTokenizer(rules="keras_hub")` (`keras_bert.text.keras_hub_rules`): KerasHub's ids.
"""

from __future__ import annotations

import datetime
import json
import logging
import os

import h5py
import keras
import numpy as np

from keras_bert import compat, outputs
from keras_bert.checkpoints.files import KERAS_HUB_VOCAB as VOCAB_ASSET
from keras_bert.checkpoints.heads import heads_of, keras_hub_heads
from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights, collect_weights, split_model
from keras_bert.config import BertConfig
from keras_bert.textfiles import read_json

logger = logging.getLogger("keras_bert")

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
SHARDED_INDEX_FILE = "model.weights.json"
METADATA_FILE = "metadata.json"
TASK_FILE, TASK_WEIGHTS_FILE, PREPROCESSOR_FILE = "task.json", "task.weights.h5", "preprocessor.json"
BACKBONE = "keras_hub>BertBackbone"
TOKENIZER_FILE, TOKENIZER = "tokenizer.json", "keras_hub>BertTokenizer"
HEAD_WEIGHTS = ("layers/dense/vars/0", "layers/dense/vars/1")  # a task preset's logits kernel and bias
_LAYER_NORM_EPS = 1e-12  # fixed in KerasHub's BertBackbone
# The tokenizer.json values our BertTokenizer reproduces; any other value is refused.
_FIXED_TOKENIZER = {"split": True, "suffix_indicator": "##", "oov_token": "[UNK]", "special_tokens": None,
                    "special_tokens_in_strings": False}


def _block(i):
    return "layers/transformer_encoder" + (f"_{i}" if i else "")


def variable_table(num_layers):
    """[(weights-file dataset path, Google name, layout)] of a BertBackbone; layout says how the KerasHub
    array is shaped: None (as Google's), "heads_in" [h, heads, d], "heads" [heads, d], "heads_out"
    [heads, d, h]."""
    table = [("layers/reversible_embedding/vars/0", "bert/embeddings/word_embeddings", None),
             ("layers/position_embedding/vars/0", "bert/embeddings/position_embeddings", None),
             ("layers/embedding/vars/0", "bert/embeddings/token_type_embeddings", None),
             ("layers/layer_normalization/vars/0", "bert/embeddings/LayerNorm/gamma", None),
             ("layers/layer_normalization/vars/1", "bert/embeddings/LayerNorm/beta", None)]
    for i in range(num_layers):
        ours, google = _block(i), f"bert/encoder/layer_{i}"
        for part in ("query", "key", "value"):
            table += [(f"{ours}/_self_attention_layer/{part}_dense/vars/0",
                       f"{google}/attention/self/{part}/kernel", "heads_in"),
                      (f"{ours}/_self_attention_layer/{part}_dense/vars/1",
                       f"{google}/attention/self/{part}/bias", "heads")]
        table += [(f"{ours}/_self_attention_layer/output_dense/vars/0",
                   f"{google}/attention/output/dense/kernel", "heads_out"),
                  (f"{ours}/_self_attention_layer/output_dense/vars/1",
                   f"{google}/attention/output/dense/bias", None)]
        for keras_hub_name, google_name in (("_self_attention_layer_norm", "attention/output/LayerNorm"),
                                            ("_feedforward_layer_norm", "output/LayerNorm")):
            table += [(f"{ours}/{keras_hub_name}/vars/0", f"{google}/{google_name}/gamma", None),
                      (f"{ours}/{keras_hub_name}/vars/1", f"{google}/{google_name}/beta", None)]
        for keras_hub_name, google_name in (("_feedforward_intermediate_dense", "intermediate/dense"),
                                            ("_feedforward_output_dense", "output/dense")):
            table += [(f"{ours}/{keras_hub_name}/vars/0", f"{google}/{google_name}/kernel", None),
                      (f"{ours}/{keras_hub_name}/vars/1", f"{google}/{google_name}/bias", None)]
    return table + [("layers/dense/vars/0", "bert/pooler/dense/kernel", None),
                    ("layers/dense/vars/1", "bert/pooler/dense/bias", None)]


def _to_google(array, layout):
    if layout == "heads_in":
        return array.reshape(array.shape[0], -1)
    if layout == "heads":
        return array.reshape(-1)
    return array.reshape(-1, array.shape[-1]) if layout == "heads_out" else array


def _to_keras_hub(array, layout, num_heads):
    if layout == "heads_in":
        return array.reshape(array.shape[0], num_heads, -1)
    if layout == "heads":
        return array.reshape(num_heads, -1)
    return array.reshape(num_heads, -1, array.shape[-1]) if layout == "heads_out" else array


def _read_json(directory, name, registered=None):
    path = os.path.join(directory, name)
    try:
        values = read_json(path)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: cannot read the KerasHub preset file: {e}") from None
    if registered and (not isinstance(values, dict) or values.get("registered_name") != registered):
        found = values.get("registered_name") if isinstance(values, dict) else type(values).__name__
        raise CheckpointError(f"{path}: registered_name is {found!r}; expected {registered!r}")
    return values


def _settings(directory, name, registered=None):
    """The "config" object of the KerasHub preset file `name` (checked as `_read_json`); CheckpointError
    naming the file when it has none."""
    values = _read_json(directory, name, registered)
    settings = values.get("config") if isinstance(values, dict) else None
    if not isinstance(settings, dict):
        raise CheckpointError(f"{os.path.join(directory, name)}: no \"config\" object; expected the "
                              f"{values.get('registered_name') or 'KerasHub'} settings under \"config\"")
    return settings


def keras_hub_backbone(directory) -> str | None:
    """The `registered_name` of a KerasHub backbone preset's config.json in `directory` (e.g.
    "keras_hub>BertBackbone"), or None when there is no such file or it names no keras_hub class."""
    path = os.path.join(directory, CONFIG_FILE)
    if not os.path.isfile(path):
        return None
    try:
        name = read_json(path).get("registered_name")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name.startswith("keras_hub>") else None


def is_keras_hub_directory(directory) -> bool:
    """True for a directory whose config.json is a KerasHub BertBackbone's."""
    return keras_hub_backbone(directory) == BACKBONE


def _weight_files(directory):
    if os.path.isfile(os.path.join(directory, WEIGHTS_FILE)):
        return [os.path.join(directory, WEIGHTS_FILE)]
    index = os.path.join(directory, SHARDED_INDEX_FILE)
    if not os.path.isfile(index):
        raise CheckpointError(f"{directory}: KerasHub preset without {WEIGHTS_FILE} or {SHARDED_INDEX_FILE}")
    weight_map = _read_json(directory, SHARDED_INDEX_FILE).get("weight_map", {})
    names = sorted({name for value in weight_map.values()
                    for name in ([value] if isinstance(value, str) else value)})
    missing = [name for name in names if not os.path.isfile(os.path.join(directory, name))]
    if not names or missing:
        raise CheckpointError(f"{index}: shards {missing or '(none listed in weight_map)'} missing from "
                              f"{directory}")
    return [os.path.join(directory, name) for name in names]


def _read_arrays(paths):
    """{dataset path: float32 array} of every variable in the Keras weights files `paths`."""
    arrays = {}
    for path in paths:
        try:
            with h5py.File(path, "r") as f:
                f.visititems(lambda name, item: arrays.__setitem__(name, np.asarray(item, np.float32))
                             if isinstance(item, h5py.Dataset) else None)
        except OSError as e:
            raise CheckpointError(f"{path}: cannot read the Keras weights file ({e}); "
                                  f"is it truncated?") from None
    return arrays


def keras_hub_config(directory) -> BertConfig:
    """The BertConfig of a KerasHub BERT preset directory's config.json; CheckpointError naming the file."""
    values = _settings(directory, CONFIG_FILE, BACKBONE)
    try:
        return BertConfig(
            vocab_size=values["vocabulary_size"], num_hidden_layers=values["num_layers"],
            num_attention_heads=values["num_heads"], hidden_size=values["hidden_dim"],
            intermediate_size=values["intermediate_dim"], hidden_act="gelu_tanh",
            hidden_dropout_prob=values.get("dropout", 0.1),
            attention_probs_dropout_prob=values.get("dropout", 0.1),
            max_position_embeddings=values.get("max_sequence_length", 512),
            type_vocab_size=values.get("num_segments", 2), layer_norm_eps=_LAYER_NORM_EPS)
    except (KeyError, ValueError, TypeError) as e:
        raise CheckpointError(f"{os.path.join(directory, CONFIG_FILE)}: not a BertBackbone config: "
                              f"{e}") from None


def read_keras_hub(directory, config=None) -> tuple[BertConfig, CheckpointWeights]:
    """(config, weights under Google's names) of a KerasHub BERT preset directory's backbone (`config`: its
    config.json's, when read already). Every transformer layer the weights file holds is read, so a config
    stating fewer is told apart (`check_config_fits`) from one stating more."""
    config = config or keras_hub_config(directory)
    files = _weight_files(directory)
    stored = _read_arrays(files)
    blocks = {path.split("/")[1] for path in stored if path.startswith("layers/transformer_encoder")}
    table = variable_table(max(len(blocks), config.num_hidden_layers))
    arrays, file_names = {}, {}
    for path, name, layout in table:
        file_names[name] = path
        if path in stored:
            arrays[name] = _to_google(stored.pop(path), layout)
    where = files[0] if len(files) == 1 else os.path.join(directory, SHARDED_INDEX_FILE)
    return config, CheckpointWeights(path=where, arrays=arrays,
                                     rename=lambda name: file_names.get(name, name), ignored=sorted(stored))


def keras_hub_head(path):
    """{"task_kind", "layer" (our head layer), the head's model arguments (a BertTextClassifier's
    "num_classes", "dropout"), "kernel" [hidden, n], "bias" [n]} (the form of `huggingface_head`) of the
    KerasHub task preset at `path` that a task folder declares (`keras_bert.checkpoints.heads`), or None
    when it is no preset or has no task.json; another task is logged and None."""
    path = os.fspath(path)
    if not (os.path.isdir(path) and is_keras_hub_directory(path)
            and os.path.isfile(os.path.join(path, TASK_FILE))):
        return None
    task = _read_json(path, TASK_FILE)
    found = task.get("registered_name") if isinstance(task, dict) else type(task).__name__
    kind, head = keras_hub_heads().get(found, (None, None)) if isinstance(found, str) else (None, None)
    if head is None:
        logger.info("%s: task %s has no keras_bert counterpart; its head is not loaded",
                    os.path.join(path, TASK_FILE), found)
        return None
    arguments = head.read(_settings(path, TASK_FILE), os.path.join(path, TASK_FILE))
    stored = _read_arrays([os.path.join(path, TASK_WEIGHTS_FILE)])
    if any(name not in stored for name in HEAD_WEIGHTS):
        raise CheckpointError(f"{os.path.join(path, TASK_WEIGHTS_FILE)}: no logits layer (layers/dense)")
    return {"task_kind": kind, "layer": head.layer, **arguments,
            "kernel": stored[HEAD_WEIGHTS[0]], "bias": stored[HEAD_WEIGHTS[1]]}


def keras_hub_text(path):
    """{"vocab_file", "lower_case", "strip_accents", "rules", "seq_length" (or None), "seq_length_source" (the
    file and key to name)} of the KerasHub preset at `path` (its tokenizer.json and task preprocessor.json),
    or None when `path` is no preset with a tokenizer. Raises CheckpointError naming the file and key for
    settings our BertTokenizer cannot reproduce (no splitting, another suffix or oov token, special tokens in
    strings)."""
    path = os.fspath(path)
    if not (os.path.isdir(path) and is_keras_hub_directory(path)
            and os.path.isfile(os.path.join(path, TOKENIZER_FILE))):
        return None
    values = _settings(path, TOKENIZER_FILE, TOKENIZER)
    for key, expected in _FIXED_TOKENIZER.items():
        if values.get(key, expected) not in (expected, [] if expected is None else expected):
            raise CheckpointError(f"{os.path.join(path, TOKENIZER_FILE)}: {key}={values[key]!r}; "
                                  f"keras_bert's tokenizer supports only {key}={expected!r}")
    lower_case, strip_accents = bool(values.get("lowercase", False)), bool(values.get("strip_accents", False))
    logger.warning("%s: lowercase=%s, strip_accents=%s applied by KerasHub's rules, not Google's: %s; "
                   "controls split words, Unicode spaces (NBSP, U+3000) do not",
                   os.path.join(path, TOKENIZER_FILE), lower_case, strip_accents,
                   ("accents kept ('Café' -> 'café', Google's uncased: 'cafe')"
                    if lower_case and not strip_accents
                    else "accents stripped" if strip_accents else "cased") +
                   (", NFKC case folding ('ß' -> 'ss')" if lower_case else ""))
    seq_length = None
    if os.path.isfile(os.path.join(path, PREPROCESSOR_FILE)):
        preprocessor = _settings(path, PREPROCESSOR_FILE)
        seq_length = preprocessor.get("sequence_length")
        if seq_length is not None and (isinstance(seq_length, bool) or not isinstance(seq_length, int)):
            raise CheckpointError(f"{os.path.join(path, PREPROCESSOR_FILE)}: sequence_length is "
                                  f"{seq_length!r}; expected an integer")
        if preprocessor.get("truncate", "round_robin") != "round_robin":
            logger.warning("%s: truncate=%r; keras_bert truncates pairs round-robin (longest first)",
                           os.path.join(path, PREPROCESSOR_FILE), preprocessor["truncate"])
    vocab_file = os.path.join(path, VOCAB_ASSET)
    if not os.path.isfile(vocab_file):
        raise CheckpointError(f"{path}: KerasHub preset with {TOKENIZER_FILE} but no {VOCAB_ASSET}")
    return {"vocab_file": vocab_file, "lower_case": lower_case, "strip_accents": strip_accents,
            "rules": "keras_hub", "seq_length": seq_length,
            "seq_length_source": f"{os.path.join(path, PREPROCESSOR_FILE)}: sequence_length"}


def _serialized(registered, module, config, dtype="float32"):
    """A Keras-serialized KerasHub object as `save_to_preset` writes it (class of `registered`)."""
    class_name = registered.split(">")[1]
    return {"module": f"keras_hub.src.models.bert.{module}", "class_name": class_name,
            "config": {"name": module, "trainable": True,
                       "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": dtype},
                                 "registered_name": None}, **config},
            "registered_name": registered}


def _backbone_config(config):
    if config.hidden_act not in ("gelu", "gelu_tanh"):
        raise ValueError(f"hidden_act={config.hidden_act!r}: KerasHub's BertBackbone computes GELU only")
    if config.hidden_act == "gelu":
        logger.warning("hidden_act='gelu' (erf): KerasHub's BertBackbone computes the tanh approximation, so "
                       "its outputs differ from this model's by the GELU approximation (~1e-3 on "
                       "all-MiniLM-L6-v2)")
    if config.layer_norm_eps != _LAYER_NORM_EPS:
        logger.warning("layer_norm_eps=%g: KerasHub's BertBackbone uses %g", config.layer_norm_eps,
                       _LAYER_NORM_EPS)
    return _serialized(BACKBONE, "bert_backbone", {
        "vocabulary_size": config.vocab_size, "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads, "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size, "dropout": config.hidden_dropout_prob,
        "max_sequence_length": config.max_position_embeddings, "num_segments": config.type_vocab_size})


def _tokenizer_config(tokenizer):
    strip_accents = tokenizer.lower_case if tokenizer.strip_accents is None else tokenizer.strip_accents
    if getattr(tokenizer, "rules", "google") != "keras_hub":
        logger.info("save_keras_hub: KerasHub tokenizes by its own character rules "
                    "(keras_bert.text.keras_hub_rules): ids equal this tokenizer's but on rare characters "
                    "(NFKC case folds, NBSP/U+3000, controls)")
    return _serialized(TOKENIZER, "bert_tokenizer", {
        "config_file": TOKENIZER_FILE, "vocabulary": None, "sequence_length": None,
        "lowercase": tokenizer.lower_case, "strip_accents": strip_accents, **_FIXED_TOKENIZER}, dtype="int32")


def _write_json(directory, name, values):
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
        json.dump(values, f, indent=4)
        f.write("\n")


def _write_h5(path, arrays):
    with h5py.File(path, "w") as f:
        for name, array in arrays.items():
            f.create_dataset(name, data=np.ascontiguousarray(array, np.float32))


def save_keras_hub(model, directory, overwrite=False) -> str:
    """Writes `model` (a BertEncoder or a task model) as a KerasHub preset directory: its encoder as a
    BertBackbone, its preprocessor's vocab and casing as a BertTokenizer (none without a preprocessor),
    and a BertClassifier's head as a BertTextClassifier task (with its preprocessor's sequence_length).
    `keras_hub.models.BertBackbone.from_preset(directory)` (and BertTokenizer / BertTextClassifier) load it
    (a task model's preset: what its task folder declares, `keras_bert.checkpoints.heads`);
    the preset is written beside `directory` and renamed into place (`keras_bert.outputs.writing_dir`): a
    non-empty `directory` is refused unless `overwrite` (then its previous preset is replaced, no stale
    task files left; files it did not write are kept).
    Returns `directory`.

    Args:
        model: a `BertEncoder` or a task model (a head KerasHub has no BERT task for is left out, with a
            warning: the backbone is written).
        directory: the preset directory to write (str or os.PathLike).
        overwrite: replace a previous preset in `directory`.

    Returns:
        `directory` (str), what `keras_hub.models.BertBackbone.from_preset` takes.

    Raises:
        keras_bert.outputs.Taken: (a `UserInputError`) `directory` is not empty and `overwrite` is False.
        keras_bert.outputs.Busy: another run or thread is writing `directory`.
        UserInputError: `directory` is a file.
        TypeError: `model` is no BertEncoder or task model with an `.encoder`.
    """
    directory = os.fspath(directory)
    encoder, _ = split_model(model)
    config = encoder.config
    backbone = _backbone_config(config)
    google = collect_weights(encoder)
    arrays = {path: _to_keras_hub(google[name], layout, config.num_attention_heads)
              for path, name, layout in variable_table(config.num_hidden_layers)}
    preprocessor = getattr(model, "preprocessor", None) or getattr(encoder, "preprocessor", None)
    kind = getattr(model, "task_kind", None)
    task = heads_of(kind)[1]
    head = _head_arrays(model, task.layer) if task else None  # read (and checked) before any write
    if kind != "encoder" and task is None:
        logger.warning("save_keras_hub: the %s head of %s has no KerasHub BERT counterpart; writing the "
                       "backbone", kind, type(model).__name__)
    with outputs.writing_dir(directory, (), overwrite) as tmp:
        _write_h5(os.path.join(tmp, WEIGHTS_FILE), arrays)
        _write_json(tmp, METADATA_FILE, {
            "keras_version": keras.version(), "saved_by": "keras_bert.checkpoints.save_keras_hub",
            "parameter_count": int(sum(np.prod(array.shape) for array in arrays.values())),
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
            "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"]})
        tokenizer = None
        if preprocessor is not None:
            tokenizer = _tokenizer_config(preprocessor.tokenizer)
            _write_json(tmp, TOKENIZER_FILE, tokenizer)
            os.makedirs(os.path.join(tmp, os.path.dirname(VOCAB_ASSET)))
            with open(os.path.join(tmp, VOCAB_ASSET), "w", encoding="utf-8") as f:
                f.write("".join(token + "\n" for token in preprocessor.tokenizer.vocab))
        else:
            logger.info("save_keras_hub: %s has no preprocessor; the preset has no tokenizer",
                        type(model).__name__)
        if task is not None:
            _write_task(tmp, model, task, head, backbone, tokenizer, preprocessor)
        _write_json(tmp, CONFIG_FILE, backbone)
    return directory


def _head_arrays(model, layer):
    """The float kernel and bias of task model `model`'s head Dense `layer` under KerasHub's task weight
    names."""
    head = model.get_layer(layer)
    kernel, bias = (keras.ops.convert_to_numpy(keras.ops.cast(v, "float32"))
                    for v in (compat.float_kernel(head), head.bias))
    return dict(zip(HEAD_WEIGHTS, (kernel, bias), strict=True))


def _write_task(tmp, model, declared, head, backbone, tokenizer, preprocessor):
    """task.weights.h5, preprocessor.json (with a tokenizer) and task.json of the task preset `declared`."""
    _write_h5(os.path.join(tmp, TASK_WEIGHTS_FILE), head)
    packing = None
    if tokenizer is not None and declared.preprocessor is not None:
        packing = _serialized(*declared.preprocessor, {
            "tokenizer": tokenizer, "config_file": PREPROCESSOR_FILE,
            "sequence_length": preprocessor.seq_length, "truncate": "round_robin"})
        _write_json(tmp, PREPROCESSOR_FILE, packing)
    _write_json(tmp, TASK_FILE, _serialized(declared.task, declared.module, {
        "backbone": backbone, "preprocessor": packing, **declared.write(model)}))
