"""The served answers of a token classifier (entities): their consistency check
(`keras_bert.export.servability`) and their readable lines (export/client.py), listed in
`keras_bert.tasks.registry.SERVED`."""

ENTITY_OUTPUTS = ("entity_text", "entity_type", "entity_start", "entity_end", "entity_count")


def check_answers(inputs, outputs):
    """Entities must be the spans of the text they name (`text[entity_start:entity_end] == entity_text`, the
    text decoded as Python decodes it, invalid bytes as U+FFFD), padded with "" / -1 past `entity_count`."""
    if "entity_count" not in outputs or "text" not in inputs:
        return None
    texts = list(inputs["text"])
    count = outputs["entity_count"]
    width = outputs["entity_text"].shape[1]
    if count.shape != (len(texts),) or (count.size and count.max() != width):
        return (f"entity_count {count.tolist()} does not fit entity_text of shape "
                f"{outputs['entity_text'].shape} for {len(texts)} texts")
    for row, text in enumerate(texts):
        decoded = text.decode("utf-8", "replace")
        for i in range(width):
            span = tuple(outputs[k][row, i] for k in ENTITY_OUTPUTS[:4])
            if i >= count[row]:
                if span != (b"", b"", -1, -1):
                    return f"text {row} entity {i} is past entity_count {count[row]} but not padding: {span}"
            elif decoded[span[2]:span[3]].encode() != span[0] or not span[0]:
                return (f"text {row} entity {i} {span[0]!r} is not text[{span[2]}:{span[3]}] = "
                        f"{decoded[span[2]:span[3]]!r}")
    return None


def describe(example):
    """(["entities: PER 'Ann' [0:3], ..."], the names shown) of one served text, or None."""
    if "entity_count" not in example:
        return None
    keys = ("entity_type", "entity_text", "entity_start", "entity_end")
    spans = list(zip(*(example[k][:example["entity_count"]] for k in keys), strict=True))
    line = "entities: " + (", ".join(f"{_str(kind)} {_str(text)!r} [{start}:{end}]"
                                     for kind, text, start, end in spans) or "none")
    return [line], ENTITY_OUTPUTS


def _str(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
