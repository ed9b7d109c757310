"""BertConfig: the architecture hyper-parameters, read from and written to the published formats.

Google's `bert_config.json` and Hugging Face's `config.json` carry the same fields under the same names
(Hugging Face adds `layer_norm_eps`, `model_type`, `architectures`, ...). Both are read by
`BertConfig.from_json_file` and written by `BertConfig.to_json_file`; a config written in either format
reads back equal. Google's format names only one gelu (its tanh approximation) and has no `layer_norm_eps`,
so we also write `layer_norm_eps` and, for an activation Google's "gelu" does not say,
`keras_bert_hidden_act`: Google's `modeling.py` ignores keys it does not know.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import numbers
import os

from keras_bert.textfiles import read_json

logger = logging.getLogger("keras_bert")

# The 24 compact models of Turc et al. (2019) plus BERT-base/large: name -> (layers, hidden).
PRESETS = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}

# Activation names accepted in config files, mapped to ours.
_ACTIVATIONS = {
    "gelu": "gelu",  # exact erf form (Hugging Face's "gelu")
    "gelu_new": "gelu_tanh",  # Hugging Face's name for the tanh approximation
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_tanh": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
    "swish": "silu",
    "silu": "silu",
}
# Written into a Google bert_config.json when its "gelu" would read back as another activation.
_GOOGLE_ACT_KEY = "keras_bert_hidden_act"
# Keys of Google and Hugging Face config files that are not ours but expected: read without a warning.
_FOREIGN_KEYS = frozenset({
    _GOOGLE_ACT_KEY, "_name_or_path", "add_cross_attention", "architectures", "bos_token_id",
    "chunk_size_feed_forward", "classifier_dropout", "directionality", "dtype", "eos_token_id",
    "finetuning_task", "gradient_checkpointing", "id2label", "is_decoder", "is_encoder_decoder", "label2id",
    "model_type", "num_labels", "output_attentions", "output_hidden_states", "output_past", "pad_token_id",
    "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head",
    "pooler_type", "position_embedding_type", "problem_type", "return_dict", "sep_token_id",
    "tie_word_embeddings", "tokenizer_class", "torch_dtype", "transformers_version", "use_cache",
})


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT encoder.

    `hidden_act` is "gelu" (exact erf, Hugging Face and Keras default) or "gelu_tanh" (the tanh approximation
    Google's original `modeling.py` uses); "relu", "tanh" and "silu" also work.

    Args:
        vocab_size: number of WordPiece tokens (the vocab.txt's lines).
        hidden_size: width of every layer (default 768, BERT-base).
        num_hidden_layers: transformer blocks (default 12).
        num_attention_heads: attention heads per block (default 12); must divide `hidden_size`.
        intermediate_size: width of the feed-forward inner layer (default 3072).
        hidden_act: the feed-forward activation (default "gelu"; see above).
        hidden_dropout_prob: dropout on embeddings and block outputs, in [0, 1] (default 0.1).
        attention_probs_dropout_prob: dropout on the attention probabilities, in [0, 1] (default 0.1).
        max_position_embeddings: the longest sequence the model takes (default 512).
        type_vocab_size: number of segment ids of `input_type_ids` (default 2).
        initializer_range: stddev of the truncated-normal initializer, >= 0 (default 0.02).
        layer_norm_eps: LayerNorm's epsilon, > 0 (default 1e-12).

    Raises:
        ValueError: naming the field: an unknown `hidden_act`; a size that is not a positive int; a
            dropout outside [0, 1]; `layer_norm_eps` <= 0; `initializer_range` < 0; `hidden_size` not a
            multiple of `num_attention_heads`.

    Examples:

        config = BertConfig.from_preset("tiny", vocab_size=30522)   # 2 layers, hidden 128
        config = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=512)
        encoder = keras_bert.BertEncoder(config)
    """

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act={self.hidden_act!r} is not supported; expected one of "
                f"{sorted(_ACTIVATIONS)}"
            )
        self.hidden_act = _ACTIVATIONS[self.hidden_act]
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range",
                     "layer_norm_eps"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise ValueError(f"BertConfig.{name} must be a number, got {value!r} "
                                 f"({type(value).__name__})")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"BertConfig.{name} must be a probability in [0, 1], "
                                 f"got {getattr(self, name)!r}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"BertConfig.layer_norm_eps must be > 0, got {self.layer_norm_eps!r}")
        if not self.initializer_range >= 0:
            raise ValueError(f"BertConfig.initializer_range must be >= 0, got {self.initializer_range!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size={self.hidden_size} is not a multiple of "
                f"num_attention_heads={self.num_attention_heads}"
            )

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_preset(cls, name: str, vocab_size: int, **overrides) -> BertConfig:
        """The published BERT family: tiny 2/128, mini 4/256, small 4/512, medium 8/512, base 12/768,
        large 24/1024 (layers/hidden), with heads = hidden/64 and intermediate = 4*hidden."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; expected one of {sorted(PRESETS)}")
        layers, hidden = PRESETS[name]
        values = dict(
            vocab_size=vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=hidden // 64,
            intermediate_size=4 * hidden,
        )
        values.update(overrides)
        return cls(**values)

    @classmethod
    def from_dict(cls, values: dict, source: str = "<dict>") -> BertConfig:
        """Builds a config from a Google or Hugging Face dict. Keys that are neither ours nor known Google/HF
        keys are ignored with one warning naming them (a typo such as "hiden_size" would otherwise pass)."""
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a JSON object of config fields, "
                             f"got {type(values).__name__}")
        fields = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in values.items() if k in fields}
        unknown = sorted(k for k in values if k not in fields and k not in _FOREIGN_KEYS)
        if unknown:
            logger.warning("%s: ignoring unknown config keys %s (not BERT config fields: %s)", source,
                           ", ".join(unknown), ", ".join(sorted(fields)))
        if _GOOGLE_ACT_KEY in values:
            known["hidden_act"] = values[_GOOGLE_ACT_KEY]
        if "vocab_size" not in known:
            raise ValueError(f"{source}: no 'vocab_size' in the BERT config")
        model_type = values.get("model_type")
        if model_type not in (None, "bert"):
            raise ValueError(f"{source}: model_type is {model_type!r}, expected 'bert'")
        try:
            return cls(**known)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def from_json_file(cls, path: str) -> BertConfig:
        """Reads Google's `bert_config.json` or Hugging Face's `config.json`."""
        if not os.path.isfile(path):
            raise FileNotFoundError(f"BERT config file not found: {path}")
        return cls.from_dict(read_json(path), source=path)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_google_dict(self) -> dict:
        """The `bert_config.json` fields; `from_dict` of the result equals this config."""
        values = self.to_dict()
        # Google's modeling.py knows "gelu" as its tanh approximation; it has no erf gelu.
        values["hidden_act"] = "gelu" if self.hidden_act in ("gelu", "gelu_tanh") else self.hidden_act
        if _ACTIVATIONS[values["hidden_act"]] != self.hidden_act:
            values[_GOOGLE_ACT_KEY] = self.hidden_act
        return values

    def to_huggingface_dict(self) -> dict:
        values = self.to_dict()
        values["hidden_act"] = {"gelu_tanh": "gelu_new", "silu": "silu"}.get(self.hidden_act, self.hidden_act)
        values.update(
            model_type="bert",
            architectures=["BertModel"],
            pad_token_id=0,
            position_embedding_type="absolute",
        )
        return values

    def to_json_file(self, path: str, fmt: str = "google") -> None:
        """Writes the config as Google's `bert_config.json` (fmt="google") or HF's `config.json`."""
        if fmt == "google":
            values = self.to_google_dict()
        elif fmt == "huggingface":
            values = self.to_huggingface_dict()
        else:
            raise ValueError(f"fmt must be 'google' or 'huggingface', got {fmt!r}")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(values, f, indent=2, sort_keys=True)
            f.write("\n")
