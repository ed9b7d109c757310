"""`PretrainingDataConfig`, the settings that decide which pre-training examples are built, and the
names of their features."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    """What the NSP pairing and the masking need (defaults: the original `create_pretraining_data.py`'s).

    Attributes:
        max_seq_length: packed length, [CLS] A [SEP] B [SEP] included (>= 5).
        max_predictions_per_seq: masked-LM prediction slots per example (>= 1).
        masked_lm_prob: fraction of the real tokens to predict, in (0, 1].
        short_seq_prob: probability of a shorter random target length, in [0, 1].
        dupe_factor: passes over the documents, each with new pairs and masks (static TFRecords only; a
            stream re-pairs and re-masks every epoch instead).
        whole_word_mask: mask all the WordPieces of a word together.
        seed: int for reproducible pairs, order and masks; None (streams only): not reproducible.
    """

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    whole_word_mask: bool = False
    seed: int | None = 12345

    def __post_init__(self):
        checks = (("max_seq_length", self.max_seq_length >= 5, ">= 5 ([CLS] A [SEP] B [SEP], 2+ tokens)"),
                  ("max_predictions_per_seq", self.max_predictions_per_seq >= 1, ">= 1"),
                  ("masked_lm_prob", 0.0 < self.masked_lm_prob <= 1.0, "in (0, 1]"),
                  ("short_seq_prob", 0.0 <= self.short_seq_prob <= 1.0, "in [0, 1]"),
                  ("dupe_factor", self.dupe_factor >= 1, ">= 1"))
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(f"PretrainingDataConfig {name}={getattr(self, name)!r}; expected {expected}")


# Original TFRecord feature name -> model input name.
FEATURE_TO_INPUT = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}
