"""BertConfig: the architecture hyper-parameters, read from and written to the published formats.

Google's `bert_config.json` and Hugging Face's `config.json` carry the same fields under the same names
(Hugging Face adds `layer_norm_eps`, `model_type`, `architectures`, ...). Both are read by
`BertConfig.from_json_file` and written by `BertConfig.to_json_file`.
"""

from __future__ import annotations

import dataclasses
import json
import os

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


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT encoder.

    `hidden_act` is "gelu" (exact erf, Hugging Face and Keras default) or "gelu_tanh" (the tanh approximation
    Google's original `modeling.py` uses); "relu", "tanh" and "silu" also work.
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
        """Builds a config from a Google or Hugging Face dict; unknown keys are ignored."""
        fields = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in values.items() if k in fields}
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
        with open(path, encoding="utf-8") as f:
            try:
                values = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
        return cls.from_dict(values, source=path)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_google_dict(self) -> dict:
        values = self.to_dict()
        # Google's modeling.py knows "gelu" as its tanh approximation; it has no erf gelu.
        values["hidden_act"] = "gelu" if self.hidden_act in ("gelu", "gelu_tanh") else self.hidden_act
        del values["layer_norm_eps"]
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
