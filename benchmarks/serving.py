"""Serving latency: the exported raw-text SavedModel vs the bare encoder vs transformers + its fast tokenizer.

  python -m benchmarks.serving --impl=ours          # export (keras_bert.export), load, time both signatures
  python -m benchmarks.serving --impl=transformers  # BertModel + BertTokenizerFast, torch CPU, no_grad
  python -m benchmarks.serving --impl=entities      # a NER export: entities (decoded in the graph) vs logits

Base config (12 layers, hidden 768) with random weights and BERT's uncased 30,522-token vocab, seq 128,
batch 1 and 8. The texts are long enough to fill all 128 positions, so every path computes the same
shapes. For ours, three figures per batch size:
  text      serving_default of the loaded SavedModel: tf-text WordPiece + packing + encoder, one graph;
  token_ids serve_token_ids of the same SavedModel on the same packed ids: the encoder alone, as served;
  keras     the Keras BertEncoder in a tf.function (inference): the bare forward pass.
For entities (a BertTokenClassifier with the 9 CoNLL-2003 tags), per batch size: `entities`, serving_default
on raw text (tokenize with offsets, windows, encoder, chunk decoding), vs `logits`, serve_token_ids of the
same SavedModel on the packed ids; the texts are cut to one window (126 pieces), so both run the encoder
once per text and the difference is what tokenizing and decoding in the graph cost.
Latency is the median of `--repeats` calls after two warm-up calls.
The real MiniLM checkpoint end to end (sentence embeddings) against ONNX Runtime: benchmarks/serving_peers.py.
"""

import tempfile
import time

from benchmarks import common
from benchmarks.common import median_latency
from benchmarks.inputs import WORDS, random_encoder, vocab_file


def texts(batch_size):
    """`batch_size` distinct English texts of ~140 words (more than 128 WordPieces each)."""
    out = []
    for i in range(batch_size):
        words = WORDS[i % len(WORDS):] + WORDS[:i % len(WORDS)]
        out.append(" ".join(words + WORDS[:60]))
    return out


def _time_ours(tf, batch_size, repeats, loaded, preprocessor, forward, tokenize):
    text = tf.constant(texts(batch_size))
    packed = preprocessor(text)
    if int(tf.reduce_min(tf.reduce_sum(packed["input_mask"], axis=1))) != common.SEQ_LENGTH:
        raise AssertionError("benchmark texts must fill all positions")
    serve_text = loaded.signatures["serving_default"]
    serve_ids = loaded.signatures["serve_token_ids"]
    return {
        f"text_b{batch_size}_ms": median_latency(lambda: serve_text(text=text), repeats) * 1e3,
        f"token_ids_b{batch_size}_ms": median_latency(lambda: serve_ids(**packed), repeats) * 1e3,
        f"keras_b{batch_size}_ms": median_latency(lambda: forward(packed).numpy(), repeats) * 1e3,
        f"tokenize_b{batch_size}_ms": median_latency(lambda: tokenize(text), repeats) * 1e3,
    }


def run_ours(size, batch_sizes, repeats):
    tf = common.configure_tensorflow()
    from keras_bert.export import export_saved_model

    encoder, preprocessor = random_encoder(size)
    forward = tf.function(lambda inputs: encoder(inputs, training=False)["pooled_output"])
    tokenize = tf.function(preprocessor)
    results = {}
    with tempfile.TemporaryDirectory() as export_dir:
        start = time.perf_counter()
        version_dir = export_saved_model(encoder, export_dir, preprocessor=preprocessor, warmup=False)
        results["export_s"] = round(time.perf_counter() - start, 1)
        loaded = tf.saved_model.load(version_dir)
        for batch_size in batch_sizes:
            results.update(_time_ours(tf, batch_size, repeats, loaded, preprocessor, forward, tokenize))
    return {k: round(v, 1) for k, v in results.items()}


def one_window_texts(batch_size, tokenizer):
    """`texts(batch_size)`, each cut to the most words that fit in one window (SEQ_LENGTH - 2 pieces)."""
    out = []
    for text in texts(batch_size):
        words = text.split()
        while len(tokenizer(" ".join(words))) > common.SEQ_LENGTH - 2:
            words.pop()
        out.append(" ".join(words))
    return out


def run_entities(size, batch_sizes, repeats):
    tf = common.configure_tensorflow()
    from keras_bert.export import export_saved_model
    from keras_bert.tasks.ner.model import BertTokenClassifier

    encoder, preprocessor = random_encoder(size)
    tags = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    model = BertTokenClassifier(encoder, labels=tags)
    results = {}
    with tempfile.TemporaryDirectory() as export_dir:
        version_dir = export_saved_model(model, export_dir, preprocessor=preprocessor, warmup=False)
        loaded = tf.saved_model.load(version_dir)
        serve_entities = loaded.signatures["serving_default"]
        serve_logits = loaded.signatures["serve_token_ids"]
        for batch_size in batch_sizes:
            text = tf.constant(one_window_texts(batch_size, preprocessor.tokenizer))
            packed = preprocessor(text)
            entities = serve_entities(text=text)
            results[f"entities_per_text_b{batch_size}"] = float(tf.reduce_mean(
                tf.cast(entities["entity_count"], tf.float32)))
            results[f"entities_b{batch_size}_ms"] = median_latency(
                lambda text=text: serve_entities(text=text), repeats) * 1e3
            results[f"logits_b{batch_size}_ms"] = median_latency(
                lambda packed=packed: serve_logits(**packed), repeats) * 1e3
    return {k: round(v, 1) for k, v in results.items()}


def _time_transformers(torch, tokenizer, model, batch_size, repeats):
    batch_texts = texts(batch_size)

    def tokenize():
        return tokenizer(batch_texts, padding="max_length", truncation=True, max_length=common.SEQ_LENGTH,
                         return_tensors="pt")

    encoded = tokenize()

    def text():
        with torch.no_grad():
            return model(**tokenize()).pooler_output

    def token_ids():
        with torch.no_grad():
            return model(**encoded).pooler_output

    return {
        f"text_b{batch_size}_ms": median_latency(text, repeats) * 1e3,
        f"token_ids_b{batch_size}_ms": median_latency(token_ids, repeats) * 1e3,
        f"tokenize_b{batch_size}_ms": median_latency(tokenize, repeats) * 1e3,
    }


def run_transformers(size, batch_sizes, repeats):
    torch = common.configure_torch()
    import transformers

    torch.manual_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = transformers.BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden,
                                     num_hidden_layers=layers, num_attention_heads=heads,
                                     intermediate_size=intermediate)
    model = transformers.BertModel(config).eval()
    tokenizer = transformers.BertTokenizerFast(vocab_file(), do_lower_case=True)
    results = {}
    for batch_size in batch_sizes:
        results.update(_time_transformers(torch, tokenizer, model, batch_size, repeats))
    return {k: round(v, 1) for k, v in results.items()}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--impl", choices=["ours", "transformers", "entities"], default="ours")
    parser.add_argument("--size", choices=sorted(common.SIZES), default="base")
    parser.add_argument("--batch_sizes", type=common.comma_separated(int), default=[1, 8])
    parser.add_argument("--repeats", type=int, default=5)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    run = {"ours": run_ours, "transformers": run_transformers, "entities": run_entities}[args.impl]
    common.emit(dict(kind="serving", impl=args.impl, size=args.size,
                     **run(args.size, args.batch_sizes, args.repeats)))


if __name__ == "__main__":
    main()
