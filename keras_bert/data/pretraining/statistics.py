"""Checks on built pre-training examples: random-next fraction, masking rate, 80/10/10 shares."""

import numpy as np


def count_statistics(examples, mask_id):
    """Counts behind `example_statistics` (they add up over batches of examples)."""
    weights = examples["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    shown = examples["input_ids"][rows, examples["masked_lm_positions"][weights]]
    original = examples["masked_lm_ids"][weights]
    return {"examples": len(examples["input_ids"]),
            "random_next": int(examples["next_sentence_labels"].sum()),
            "real_tokens": int(examples["input_mask"].sum()), "masked": len(shown),
            "mask_token": int(np.sum(shown == mask_id)),
            "kept": int(np.sum((shown == original) & (shown != mask_id))),
            "random_token": int(np.sum((shown != original) & (shown != mask_id)))}


def statistics_from_counts(counts):
    """`example_statistics` from the sums of `count_statistics`."""
    masked = max(counts["masked"], 1)
    return {
        "random_next_fraction": counts["random_next"] / max(counts["examples"], 1),
        "masked_fraction": counts["masked"] / max(counts["real_tokens"], 1),
        "mask_token_fraction": counts["mask_token"] / masked,
        "kept_fraction": counts["kept"] / masked,
        "random_token_fraction": counts["random_token"] / masked,
    }


def example_statistics(examples, mask_id=None):
    """Checks on built examples (dict of numpy arrays, original names): fraction of random-next pairs,
    masked tokens per real token, and among masked positions the fractions replaced by [MASK], kept, and
    replaced by another token. `mask_id` defaults to the most frequent replacement id."""
    if mask_id is None:
        weights = examples["masked_lm_weights"] > 0
        shown = examples["input_ids"][np.nonzero(weights)[0], examples["masked_lm_positions"][weights]]
        mask_id = int(np.bincount(shown).argmax()) if len(shown) else 0
    return statistics_from_counts(count_statistics(examples, mask_id))
