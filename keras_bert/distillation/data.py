"""The rows a `TaskDistiller` trains on: `distillation_dataset` (labelled and unlabelled texts, packed as the
teacher packs them, with their sample weights) and `augment_texts` (more unlabelled texts from the
labelled ones: words masked or swapped, n-gram spans)."""

import numpy as np
import tensorflow as tf

from keras_bert.text.vocab import MASK


def distillation_dataset(teacher, x, y=None, sample_weight=None, unlabeled=None, batch_size=32, shuffle=True,
                         seed=None):
    """Batches of (inputs, targets, sample_weight) for `TaskDistiller.fit`.

    Args:
        teacher: the teacher (its preprocessor packs raw text, as its own `fit` does).
        x, y, sample_weight: labelled data: raw text and labels (what the teacher's `fit` takes), or a
            batched `tf.data.Dataset` of (token-id inputs, targets[, sample_weight]).
        unlabeled: optional raw text (a list of str, or a tuple of two lists for pairs) or a batched dataset
            of token-id inputs: rows with sample weight 0 (targets zeros), taught by the teacher alone.
        batch_size, shuffle, seed: of raw text (batches of a dataset are kept, their order shuffled).
    """
    labeled = x if isinstance(x, tf.data.Dataset) else teacher.text_dataset(
        x, y, sample_weight, batch_size, shuffle=shuffle, seed=seed)
    if labeled is None:
        raise ValueError("distillation_dataset takes raw text with labels, or a tf.data.Dataset of "
                         "(inputs, targets[, sample_weight]) batches")
    labeled = labeled.map(_with_weights)
    if unlabeled is None:
        return labeled
    if not isinstance(unlabeled, tf.data.Dataset):
        unlabeled = teacher.text_dataset(unlabeled, batch_size=batch_size, shuffle=shuffle, seed=seed)
        if unlabeled is None:
            raise ValueError("unlabeled: expected raw text (a list of str, or a tuple of two lists) or a "
                             "dataset of token-id inputs")
    spec = labeled.element_spec
    mask_ids = _mask_ids(teacher.preprocessor.tokenizer)
    unlabeled = unlabeled.map(lambda inputs, *_: (mask_ids(inputs), *_zeros(inputs, spec[1:])))
    data = labeled.concatenate(unlabeled)
    batches = int(data.cardinality().numpy())
    return data.shuffle(max(batches, 1), seed=seed) if shuffle and batches > 0 else data


def _mask_ids(tokenizer):
    """inputs -> inputs whose run of the pieces of the text "[MASK]" (what `augment_texts` writes for a
    masked word; the tokenizer splits it as any text) is the one [MASK] id, the later pieces moved up."""
    pieces = [int(i) for i in tokenizer.tokenize(tf.constant([MASK]))[0].numpy()]
    if tokenizer.unk_id in pieces:  # a vocab without "[", "]" or "mask": a run of [UNK] is no mask
        return lambda inputs: inputs

    def collapse(inputs):
        ids, length = inputs["input_word_ids"], tf.shape(inputs["input_word_ids"])[1]
        ahead = tf.pad(ids, [[0, 0], [0, len(pieces)]])
        starts = tf.reduce_all([ahead[:, j:j + length] == piece for j, piece in enumerate(pieces)], axis=0)
        inside = tf.reduce_any([tf.zeros_like(starts)] + [  # the pieces of a run after its first
            tf.pad(starts, [[0, 0], [j, 0]])[:, :length] for j in range(1, len(pieces))], axis=0)
        keep = (inputs["input_mask"] > 0) & ~inside
        values = {"input_word_ids": tf.where(starts, tokenizer.mask_id, ids),
                  "input_type_ids": inputs["input_type_ids"], "input_mask": inputs["input_mask"]}
        return {**inputs, **{key: tf.ragged.boolean_mask(value, keep).to_tensor(
            tokenizer.pad_id if key == "input_word_ids" else 0, shape=tf.shape(ids))
            for key, value in values.items()}}

    return collapse


def _with_weights(inputs, targets, sample_weight=None):
    """A batch with its sample weights (when it has none, ones shaped as its (first) targets)."""
    if sample_weight is None:
        sample_weight = tf.ones(tf.shape(tf.nest.flatten(targets)[0]), tf.float32)
    return inputs, targets, tf.cast(sample_weight, tf.float32)


def _zeros(inputs, specs):
    """Zeros shaped as `specs` (targets and weights of a labelled batch) for the batch of `inputs`: its batch
    size in the first axis, its sequence length in the others the specs leave open."""
    shape = tf.shape(inputs["input_word_ids"])
    batch, length = shape[0], shape[-1]

    def zeros(spec):
        dims = [batch] + [length if dim is None else dim for dim in spec.shape[1:]]
        return tf.zeros(tf.stack(dims), spec.dtype)

    return tf.nest.map_structure(zeros, specs)


def augment_texts(texts, factor, seed=0, mask_prob=0.1, swap_prob=0.1, ngram_prob=0.25, words=None):
    """`factor` new texts per text of `texts` for the teacher to label (Tang et al. 2019's augmentation):
    each word, with `mask_prob` made "[MASK]" (`distillation_dataset` gives it the [MASK] id), else with
    `swap_prob` swapped for a random word of `words` (default: the words of `texts`); then with
    `ngram_prob` the text cut to a random n-gram of it (n of 1..5). Deterministic given `seed`;
    whitespace-split words, joined by one space."""
    if factor < 0 or not 0 <= mask_prob + swap_prob <= 1 or not 0 <= ngram_prob <= 1:
        raise ValueError(f"augment_texts: factor={factor}, mask_prob={mask_prob}, swap_prob={swap_prob}, "
                         f"ngram_prob={ngram_prob}; expected factor >= 0 and probabilities in [0, 1]")
    rng = np.random.default_rng(seed)
    split = [text.split() for text in texts]
    vocab = list(words) if words is not None else [word for text in split for word in text]
    out = []
    for _ in range(factor):
        for text in split:
            draws, picks = rng.random(len(text)), rng.integers(0, max(len(vocab), 1), len(text))
            new = [MASK if draw < mask_prob else vocab[pick] if draw < mask_prob + swap_prob else word
                   for word, draw, pick in zip(text, draws, picks, strict=True)]
            if len(new) > 1 and rng.random() < ngram_prob:
                n = int(rng.integers(1, min(5, len(new)) + 1))
                start = int(rng.integers(0, len(new) - n + 1))
                new = new[start:start + n]
            out.append(" ".join(new))
    return out
