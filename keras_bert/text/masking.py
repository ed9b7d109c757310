"""Masked-LM masking, following `create_masked_lm_predictions` of Google's `create_pretraining_data.py`:
shuffle the candidate words, take them while the count fits, then per chosen position 80% [MASK], 10% a
random vocab id, 10% unchanged.

The rule is stated once, as the functions below that work on numpy arrays and on tf tensors alike:
`MaskedLMMasker` applies it in a tf graph (dynamic masking in tf.data) and
`keras_bert.data.pretraining.masking` in numpy (static masks written to TFRecords); the two differ only in
how they draw the random order, not in what they choose.
"""

import numpy as np
import tensorflow as tf

MASK_TOKEN_RATE = 0.8  # share of chosen positions shown as [MASK]
RANDOM_TOKEN_RATE = 0.1  # share shown as a uniformly random vocab id; the rest keep their token


def _namespace(array):
    return tf if tf.is_tensor(array) else np


def continuation_pieces(vocab):
    """bool numpy [len(vocab)]: True for "##" pieces, which join the word before them."""
    return np.array([token.startswith("##") for token in vocab], bool)


def masking_candidates(ids, input_mask, special_ids):
    """bool [batch, seq]: real (mask > 0) positions whose id is not special. `special_ids` lists [CLS], [SEP],
    [PAD], [MASK] and [UNK]: unlike the original, which excludes only [CLS] and [SEP], [UNK] is never a
    target."""
    candidate = input_mask > 0
    for special in special_ids:
        candidate &= ids != special
    return candidate


def prediction_budget(num_tokens, masked_lm_prob, max_predictions_per_seq):
    """Positions to predict per row: min(max_predictions_per_seq, max(1, round(num_tokens * prob))), with
    num_tokens (float [batch]) all real tokens, [CLS] and [SEP] included, as the original counts; rounding
    half to even (numpy, tf and Python 3 `round` agree). Returns float [batch]."""
    xp = _namespace(num_tokens)
    return xp.minimum(xp.maximum(xp.round(num_tokens * masked_lm_prob), 1.0), float(max_predictions_per_seq))


def word_leaders(candidate, continuation):
    """bool [batch, seq]: candidates that start a masking group. `continuation` (bool [batch, seq]) marks "##"
    pieces; as the original, such a piece joins the last candidate group, whatever lies between them."""
    if tf.is_tensor(candidate):
        has_earlier = tf.math.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True) > 0
    else:
        has_earlier = np.cumsum(candidate, axis=1) - candidate > 0
    return candidate & ~(continuation & has_earlier)


def group_fits(used, size, budget):
    """Whether a group of `size` positions (0: no group) is taken after `used`: groups come in random order
    and one that would pass the budget is skipped, so a later, smaller one may still fit."""
    return (size > 0) & (used + size <= budget)


def replacement_ids(ids, draw, random_ids, mask_id, mask_token_rate=MASK_TOKEN_RATE,
                    random_token_rate=RANDOM_TOKEN_RATE):
    """What a chosen position shows, from `draw` (uniform [0, 1), as ids): [MASK] below mask_token_rate, the
    random id (uniform over the vocab) in the next random_token_rate, else the original id."""
    xp = _namespace(ids)
    return xp.where(draw < mask_token_rate, mask_id,
                    xp.where(draw < mask_token_rate + random_token_rate, random_ids, ids))


class MaskedLMMasker:
    """Adds masked-LM targets to packed BERT inputs (a plain callable for `ds.map`, not a Keras layer).

    Args:
        vocab_size: int; random replacements are drawn uniformly from [0, vocab_size) as in the original.
        mask_id: id of [MASK].
        special_ids: ids never masked ([CLS], [SEP], [PAD], ...).
        max_predictions_per_seq: int, size of the output prediction slots.
        masked_lm_prob: fraction of the sequence (all non-padding tokens, [CLS]/[SEP] included, as the
            original counts) to predict: min(max_predictions_per_seq, max(1, round(n_tokens * prob))).
        mask_token_rate: share of chosen positions replaced by [MASK].
        random_token_rate: share of chosen positions replaced by a random id; the rest keep their token.
        whole_word_mask: mask all pieces of a word together. Words come from the input key `word_ids`
            (int [batch, seq]: equal ids on consecutive positions = one word, as `BertTokenizer.
            tokenize_with_word_ids` gives) or, without that key, from `vocab` (a piece starting with "##"
            joins the previous piece, the original's rule).
        vocab: list of str, needed for whole-word masking without `word_ids`.
        seed: int or None. With a seed, a `tf.random.Generator` makes the masks reproducible for a
            sequential `ds.map` (masks still change from batch to batch and epoch to epoch). For a
            parallel map, pass a per-element seed instead: `masker(features, seed=s)` with s int64 [2]
            (e.g. zip with `tf.data.Dataset.random(seed).batch(2)`), which is stateless.

    Call: `masker(features)` where features is a dict with int `input_word_ids` and `input_mask`
    ([batch, seq] or one example [seq]) → the same dict with `input_word_ids` replaced by the masked ids
    and added `masked_lm_positions` int32, `masked_lm_ids` int32, `masked_lm_weights` float32, each
    [batch, max_predictions_per_seq], zero padded, positions ascending.

    Examples:

        masker = MaskedLMMasker(vocab_size=tokenizer.vocab_size, mask_id=tokenizer.mask_id,
                                special_ids=tokenizer.special_ids, max_predictions_per_seq=20, seed=0)
        features = masker(preprocessor(tf.constant(["the cat sat on the mat"])))
        features["masked_lm_positions"], features["masked_lm_ids"], features["masked_lm_weights"]
        pretraining = text_dataset.batch(32).map(preprocessor).map(masker)
    """

    def __init__(
        self,
        vocab_size,
        mask_id,
        special_ids,
        max_predictions_per_seq,
        masked_lm_prob=0.15,
        mask_token_rate=MASK_TOKEN_RATE,
        random_token_rate=RANDOM_TOKEN_RATE,
        whole_word_mask=False,
        vocab=None,
        seed=None,
    ):
        if (
            not 0.0 <= mask_token_rate + random_token_rate <= 1.0
            or min(mask_token_rate, random_token_rate) < 0
        ):
            raise ValueError(
                f"mask_token_rate={mask_token_rate}, random_token_rate={random_token_rate}; "
                "expected rates >= 0 with a sum <= 1."
            )
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob={masked_lm_prob}; expected a value in (0, 1].")
        if int(max_predictions_per_seq) < 1:
            raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq}; expected >= 1.")
        self.vocab_size = int(vocab_size)
        self.mask_id = int(mask_id)
        self.special_ids = sorted({int(i) for i in special_ids})
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.masked_lm_prob = float(masked_lm_prob)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.whole_word_mask = bool(whole_word_mask)
        self.seed = seed
        self._continuation = None
        if vocab is not None:
            if len(vocab) != self.vocab_size:
                raise ValueError(f"len(vocab)={len(vocab)} but vocab_size={vocab_size}; expected the same.")
            self._continuation = tf.constant(continuation_pieces(vocab))
        self._generator = tf.random.Generator.from_seed(seed) if seed is not None else None

    def get_config(self):
        return {
            "vocab_size": self.vocab_size,
            "mask_id": self.mask_id,
            "special_ids": self.special_ids,
            "max_predictions_per_seq": self.max_predictions_per_seq,
            "masked_lm_prob": self.masked_lm_prob,
            "mask_token_rate": self.mask_token_rate,
            "random_token_rate": self.random_token_rate,
            "whole_word_mask": self.whole_word_mask,
            "seed": self.seed,
        }

    def _random_seeds(self, seed):
        """Four stateless seeds (int64 [4, 2]) for this call."""
        if seed is not None:
            return tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
        if self._generator is not None:
            return tf.transpose(self._generator.make_seeds(4))
        return tf.random.uniform([4, 2], maxval=tf.int64.max, dtype=tf.int64)

    def _word_leaders(self, ids, candidate, features):
        """Bool [batch, seq]: candidate positions that start a new masking group."""
        if not self.whole_word_mask:
            return candidate
        if "word_ids" in features:
            word_ids = tf.cast(features["word_ids"], tf.int32)
            if word_ids.shape.rank == 1:
                word_ids = word_ids[None]
            previous = tf.pad(word_ids[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
            previous_candidate = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
            return candidate & ~(previous_candidate & tf.equal(word_ids, previous))
        if self._continuation is None:
            raise ValueError(
                "MaskedLMMasker(whole_word_mask=True) needs `vocab` at construction or a `word_ids` "
                "input key."
            )
        return word_leaders(candidate, tf.gather(self._continuation, ids))

    def __call__(self, features, seed=None):
        features = dict(features)
        ids = tf.cast(features["input_word_ids"], tf.int32)
        mask = tf.cast(features["input_mask"], tf.int32)
        unbatched = ids.shape.rank == 1
        if unbatched:
            ids, mask = ids[None], mask[None]
        seeds = self._random_seeds(seed)
        candidate = masking_candidates(ids, mask, self.special_ids)
        n_tokens = tf.cast(tf.reduce_sum(mask, axis=1), tf.float64)
        n_predict = tf.cast(
            prediction_budget(n_tokens, self.masked_lm_prob, self.max_predictions_per_seq), tf.int32
        )
        leaders = self._word_leaders(ids, candidate, features)
        chosen = _chosen_positions(candidate, leaders, n_predict, seeds[0])
        masked_ids = tf.where(chosen, self._replacements(ids, seeds), ids)
        outputs = {"input_word_ids": masked_ids, **self._prediction_slots(ids, chosen)}
        for name, value in outputs.items():
            features[name] = value[0] if unbatched else value
        return features

    def _replacements(self, ids, seeds):
        """int32 [batch, seq]: each id as it would read if chosen: [MASK] with mask_token_rate, a random id
        with random_token_rate, else unchanged."""
        batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
        draw = tf.random.stateless_uniform([batch, seq], seeds[1])
        random_ids = tf.random.stateless_uniform(
            [batch, seq], seeds[2], maxval=self.vocab_size, dtype=tf.int32
        )
        return replacement_ids(
            ids, draw, random_ids, self.mask_id, self.mask_token_rate, self.random_token_rate
        )

    def _prediction_slots(self, ids, chosen):
        """`masked_lm_positions`, `masked_lm_ids` and `masked_lm_weights` [batch, max_predictions_per_seq]:
        the chosen positions in ascending order, padded with 0."""
        batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
        positions = tf.broadcast_to(tf.range(seq)[None], [batch, seq])
        sort_key = tf.where(chosen, positions, positions + seq)
        ordered = tf.sort(sort_key, axis=1)
        width = self.max_predictions_per_seq
        ordered = tf.pad(ordered, [[0, 0], [0, tf.maximum(0, width - seq)]], constant_values=2 * seq)[
            :, :width
        ]
        valid = ordered < seq
        masked_positions = tf.where(valid, ordered, 0)
        masked_lm_ids = tf.where(valid, tf.gather(ids, masked_positions, batch_dims=1), 0)
        return {
            "masked_lm_positions": masked_positions,
            "masked_lm_ids": masked_lm_ids,
            "masked_lm_weights": tf.cast(valid, tf.float32),
        }


def _chosen_positions(candidate, leaders, n_predict, seed):
    """bool [batch, seq]: the candidates of the groups (a leader and the candidates after it up to the next)
    taken in a random order (stateless `seed`) while they fit in `n_predict` (int32 [batch])."""
    batch, seq = tf.shape(candidate)[0], tf.shape(candidate)[1]
    group = tf.math.cumsum(tf.cast(leaders, tf.int32), axis=1) - 1  # group number of each position
    group = tf.where(candidate, group, seq)  # non-candidates go to an overflow slot
    row_offset = tf.range(batch)[:, None] * (seq + 1)
    group_size = tf.reshape(
        tf.math.unsorted_segment_sum(
            tf.ones([batch * seq], tf.int32), tf.reshape(group + row_offset, [-1]), batch * (seq + 1)
        ),
        [batch, seq + 1],
    )[:, :seq]
    # Random order of groups (the original's rng.shuffle(cand_indexes)); empty groups go last.
    keys = tf.random.stateless_uniform([batch, seq], seed)
    keys = tf.where(group_size > 0, keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)
    sizes_in_order = tf.gather(group_size, order, batch_dims=1)

    def take(used, size):
        return used + tf.where(group_fits(used, size, n_predict), size, 0)

    used_after = tf.scan(take, tf.transpose(sizes_in_order), initializer=tf.zeros([batch], tf.int32))
    used_before = tf.concat([tf.zeros([1, batch], tf.int32), used_after[:-1]], axis=0)
    taken_in_order = tf.transpose(used_after > used_before)
    taken_group = tf.gather(taken_in_order, tf.argsort(order, axis=1), batch_dims=1)
    taken_group = tf.pad(taken_group, [[0, 0], [0, 1]])  # overflow slot: never taken
    return tf.gather(taken_group, group, batch_dims=1) & candidate
